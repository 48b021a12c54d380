/**
 * The feed's door: an order event's shape (the CloudEvents envelope, its cursor) and its SQL (the
 * events in commit order, pruning what no endpoint is owed). Imports no other room of events/.
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
export { eventOf, eventsAfter, EventsRepository, type EventRow } from './events-repository.js';
