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
