/**
 * A segment's outbox: the stream the deduct appends every sale to (entries decoded by
 * inventory/records/outbox-entry.ts). It is the durable record of a sale until the order row
 * exists; the worker deletes an entry only after its row is committed.
 */
import type { RedisClient } from '../redis/connection.js';
import { execByNode } from '../redis/batch.js';
import { decodeOutboxEntry, type SoldOrder, type StreamEntry } from '../inventory/index.js';
import type { Keys } from '../redis/keys.js';

/** One sale as the outbox holds it (the deduct's record). */

/**
 * Entries of a segment's outbox, oldest first.
 * @param range.until - stream id (or ms) of the newest entry to read; default: all.
 * @param range.count - most entries to read; default all.
 */
export async function readOutbox(
  redis: RedisClient,
  keys: Keys,
  productId: string,
  segment: number,
  range: { until?: string; count?: number } = {},
): Promise<SoldOrder[]> {
  const k = keys.segment(productId, segment).outbox;
  const entries = (
    range.count
      ? await redis.xrange(k, '-', range.until ?? '+', 'COUNT', range.count)
      : await redis.xrange(k, '-', range.until ?? '+')
  ) as StreamEntry[];
  return entries.map(decodeOutboxEntry);
}

/** Deletes persisted orders from their segments' outboxes (one pipeline per Redis node). */
export async function clearOutbox(
  redis: RedisClient,
  keys: Keys,
  orders: readonly SoldOrder[],
): Promise<void> {
  const bySegment = new Map<string, string[]>();
  for (const o of orders) {
    const k = keys.segment(o.productId, o.segment).outbox;
    let ids = bySegment.get(k);
    if (!ids) bySegment.set(k, (ids = []));
    ids.push(o.outboxId);
  }
  // XDEL is idempotent: a batch item refused during a slot move may safely be sent again
  await execByNode(
    redis,
    [...bySegment],
    ([k]) => k,
    (p, [k, ids]) => p.xdel(k, ...ids),
  );
}
