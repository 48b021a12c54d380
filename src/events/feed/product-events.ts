/**
 * Publishing events of a product that are not an order's (a draw's, a waiting room's moments):
 * application code hands a batch of them to `publishProductEvents`, in its own transaction or
 * not, and they ride the feed and the webhooks as the order events do
 * (docs/events.md#events-that-are-not-an-orders).
 *
 * - **At least once, written once.** Each event carries its producer's id, the same each time it
 *   publishes it (after a crash it publishes again): an id already written is skipped
 *   (ON CONFLICT DO NOTHING), and so is a repeat within the batch.
 * - **A subject's order.** Each event gets its subject's next sequence number. Publishing holds
 *   the subject's row of `product_event_subjects` until the transaction ends, so a subject's
 *   numbers follow the order the publishers commit in, and each endpoint is sent them in that
 *   order. Subjects are locked in one order (sorted), so two batches never wait on each other
 *   in a circle.
 * - **One statement** a batch, written in the caller's transaction when it passes one: visible in
 *   the feed when it commits, never behind a cursor already passed (the feed's horizon).
 */
import type { Db } from '../../db/index.js';
import { ID_PATTERN } from '../../ids.js';
import { EVENT_FAMILIES, EVENT_SOURCE } from './event-types.js';
import { insertProductEvents } from './product-events-repository.js';

export interface ProductEventInput {
  /** the producer's id of this event, `<type>:...`, the same each time it is published */
  id: string;
  productId: string;
  /** `<family>.<what>`, e.g. `draw.won`; never `order.` */
  type: string;
  /** what the event is about, e.g. `sneaker-drop/entries/alice`; its events are sent in order */
  subject: string;
  data: Record<string, unknown>;
}

/** A product event application code got wrong: nothing of its batch was written. */
export class InvalidProductEvent extends Error {
  override name = 'InvalidProductEvent';
}

const SOURCE = /^\/seckill\/[a-z][a-z0-9-]{0,62}$/;
const TYPE = /^[a-z][a-z0-9-]*(\.[a-z0-9_-]+)+$/;
/** printable ASCII, no space: an id is a delivery's `webhook-id` header */
const TEXT = /^[\x21-\x7e]{1,256}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** the largest `data`, as JSON: a delivery is one POST of it */
export const MAX_DATA_BYTES = 64 * 1024;

/** The family each listed type belongs to (its source). */
const familyOf = new Map<string, string>(
  Object.values(EVENT_FAMILIES).flatMap((f) => f.types.map((t): [string, string] => [t, f.source])),
);

function check(source: string, event: ProductEventInput): string {
  const bad = (why: string) =>
    new InvalidProductEvent(`product event ${JSON.stringify(event.id)}: ${why}`);
  if (!TYPE.test(event.type) || event.type.length > 100 || event.type.startsWith('order.')) {
    throw bad(`type ${JSON.stringify(event.type)} must be <family>.<what>, not order.*`);
  }
  const listed = familyOf.get(event.type);
  if (listed !== undefined && listed !== source) {
    throw bad(`type ${event.type} is of ${listed}, not ${source}`);
  }
  if (!TEXT.test(event.id) || !event.id.startsWith(`${event.type}:`)) {
    // an id unique among every family's: two producers never skip each other's event
    throw bad(`id must be "${event.type}:..." (printable, no space, at most 256 characters)`);
  }
  if (!TEXT.test(event.subject) || UUID.test(event.subject)) {
    // a uuid is an order's subject: the two would share one sequence and one lane
    throw bad('subject must be printable, no space, at most 256 characters, and not a uuid');
  }
  if (!ID_PATTERN.test(event.productId)) throw bad('productId must be a product id');
  if (typeof event.data !== 'object' || event.data === null || Array.isArray(event.data)) {
    throw bad('data must be a JSON object');
  }
  const json = JSON.stringify(event.data);
  if (Buffer.byteLength(json) > MAX_DATA_BYTES) {
    throw bad(`data is over ${MAX_DATA_BYTES} bytes as JSON`);
  }
  return json;
}

/**
 * Writes the events not written yet, in one statement, each with its subject's next sequence
 * number (in the batch's order). @param db - the database, or the producer's transaction (the
 * events then commit, or not, with it) @param source - the family, e.g. `/seckill/draws`
 * @returns how many were new @throws InvalidProductEvent before writing anything
 */
export async function publishProductEvents(
  db: Db,
  source: string,
  events: readonly ProductEventInput[],
): Promise<number> {
  if (!SOURCE.test(source) || source === EVENT_SOURCE) {
    throw new InvalidProductEvent(`source ${JSON.stringify(source)} must be /seckill/<family>`);
  }
  const datas = events.map((e) => check(source, e));
  if (events.length === 0) return 0;
  return insertProductEvents(
    db,
    source,
    events.map((e, i) => ({ ...e, data: datas[i]! })),
  );
}
