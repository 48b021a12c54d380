/**
 * The feed's door: an event's shape (the CloudEvents envelope, its cursor), the event types by
 * family, publishing a product's events, and the SQL of both tables of events read as one (the
 * events in commit order, a subject's events, pruning what no endpoint is owed). Imports no other
 * room of events/.
 */
export {
  cloudEvent,
  compareCursors,
  decodeCursor,
  encodeCursor,
  FEED_START,
  type CloudEvent,
  type FeedCursor,
  type FeedEvent,
  type OrderCloudEvent,
  type ProductCloudEvent,
} from './cloud-event.js';
export { EVENT_FAMILIES, EVENT_SOURCE, EVENT_TYPES, type EventType } from './event-types.js';
export {
  eventOf,
  eventsAfter,
  feedHorizon,
  eventsOfSubject,
  EventsRepository,
  type EventRow,
} from './events-repository.js';
export {
  InvalidProductEvent,
  MAX_DATA_BYTES,
  publishProductEvents,
  type ProductEventInput,
} from './product-events.js';
