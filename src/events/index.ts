/**
 * Order events and their delivery: every change of an order's state is an event written in
 * its transaction (triggers on `orders`), read back in commit order by the pull feed, and sent
 * to the registered webhook endpoints by BullMQ workers (docs/events.md).
 */
export {
  cloudEvent,
  compareCursors,
  decodeCursor,
  encodeCursor,
  EVENT_SOURCE,
  EVENT_TYPES,
  FEED_START,
  type CloudEvent,
  type EventType,
  type FeedCursor,
  type OrderEvent,
} from './cloud-event.js';
export { EventsRepository } from './events-repository.js';
export {
  EndpointsRepository,
  type Endpoint,
  type EndpointBacklog,
} from './endpoints-repository.js';
export {
  LanesRepository,
  type Ack,
  type DeadLetter,
  type HandOn,
  type Lane,
  type LaneRef,
} from './lanes-repository.js';
export {
  checkReceiverHost,
  checkReceiverUrl,
  isPrivateAddress,
  ReceiverRefused,
  type ReceiverRules,
} from './receiver-policy.js';
export { newSecret, signDelivery } from './signing.js';
export { ackBatcher } from './ack-batcher.js';
export { createSender, retryAfterMs, type SendOutcome, type Sender } from './sender.js';
export { retryDelay, JITTER, MAX_RETRY_AFTER_MS } from './retry-schedule.js';
export {
  DeadLettered,
  deliverDue,
  DeliveryFailed,
  type DeliveryCore,
  type DeliveryMetrics,
  type LaneOutcome,
} from './delivery.js';
export { deliverLane, type LaneDeps, type LaneResult } from './lane-delivery.js';
export { deliverBatch, slots, type BatchDeps, type BatchResult } from './batch-delivery.js';
export { relay, RELAY_PAGE, STRANDED_AFTER_MS, type RelayDeps } from './relay.js';
export {
  createDeliveryWorker,
  createEventQueues,
  JOB as EVENT_JOB,
  LANE_JOB_OPTIONS,
  laneJobId,
  queueBatches,
  queueLanes,
  WEBHOOKS_QUEUE,
} from './queue.js';
export { registerDeliveryMetrics } from './metrics.js';
export { nextRelayWait, RELAY_IDLE_MS, startRelayLoop, type RelayLoop } from './relay-loop.js';
