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
} from './feed/cloud-event.js';
export { EventsRepository } from './feed/events-repository.js';
export {
  EndpointsRepository,
  type Endpoint,
  type EndpointBacklog,
} from './endpoints/endpoints-repository.js';
export {
  LanesRepository,
  type Ack,
  type DeadLetter,
  type HandOn,
  type Lane,
  type LaneRef,
} from './delivery/lanes-repository.js';
export {
  addressRefusal,
  checkReceiverHost,
  checkReceiverUrl,
  isPrivateAddress,
  ReceiverRefused,
  type ReceiverRules,
} from './endpoints/receiver-policy.js';
export {
  ReceiverNames,
  receiverNames,
  type ReceiverNamesOptions,
  type ResolvedAddress,
} from './endpoints/receiver-names.js';
export { newSecret, signDelivery } from './endpoints/signing.js';
export { ackBatcher } from './delivery/ack-batcher.js';
export { createSender, retryAfterMs, type SendOutcome, type Sender } from './delivery/sender.js';
export { retryDelay, JITTER, MAX_RETRY_AFTER_MS } from './delivery/retry-schedule.js';
export {
  DeadLettered,
  deliverDue,
  DeliveryFailed,
  type DeliveryCore,
  type DeliveryMetrics,
  type LaneOutcome,
} from './delivery/delivery.js';
export { deliverLane, type LaneDeps, type LaneResult } from './delivery/lane-delivery.js';
export {
  deliverBatch,
  slots,
  type BatchDeps,
  type BatchResult,
} from './delivery/batch-delivery.js';
export { relay, RELAY_PAGE, STRANDED_AFTER_MS, type RelayDeps } from './relay/relay.js';
export {
  createDeliveryWorker,
  createEventQueues,
  JOB as EVENT_JOB,
  LANE_JOB_OPTIONS,
  laneJobId,
  queueBatches,
  queueLanes,
  WEBHOOKS_QUEUE,
} from './delivery/queue.js';
export { registerDeliveryMetrics } from './delivery/metrics.js';
export {
  nextRelayWait,
  RELAY_IDLE_MS,
  startRelayLoop,
  type RelayLoop,
} from './relay/relay-loop.js';
