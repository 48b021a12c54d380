/**
 * The deliveries' door: sending a lane's due events, signed, to its endpoint (the sender, the
 * retry schedule, the outcome of each attempt), a worker's slots shared among the endpoints, the
 * BullMQ jobs that carry lanes to a worker, and their metrics. Reads and moves lanes through
 * lanes/'s door; knows no relay.
 */
export { ackBatcher } from './ack-batcher.js';
export { deliverBatch, type BatchDeps, type BatchResult } from './batch-delivery.js';
export {
  EndpointSlots,
  stallMsFor,
  type Admission,
  type EndpointSlotsOptions,
  type Slot,
} from './endpoint-slots.js';
export {
  deliverDue,
  type DeliveryCore,
  type DeliveryMetrics,
  type LaneOutcome,
} from './lane-attempt.js';
export { deliverLane, type LaneDeps, type LaneResult } from './lane-delivery.js';
export { registerDeliveryMetrics } from './metrics.js';
export {
  createDeliveryWorker,
  createEventQueues,
  JOB as EVENT_JOB,
  JOB_OPTIONS,
  laneJobId,
  queueBatches,
  queueLanes,
  WEBHOOKS_QUEUE,
} from './queue.js';
export { holdDelay, JITTER, MAX_RETRY_AFTER_MS, retryDelay } from './retry-schedule.js';
export { createSender, retryAfterMs, type SendOutcome, type Sender } from './sender.js';
