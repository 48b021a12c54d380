/**
 * A segment's outbox: the stream the deduct appends every sale to (see lua/deduct-4.lua for the
 * fields). It is the durable record of a sale until the order row exists; the worker deletes an
 * entry only after its row is committed.
 */
import type { Redis } from 'ioredis';
import type { Purchase } from '../inventory/index.js';
import type { Keys } from '../redis/keys.js';
import { streamIdMs } from '../redis/time.js';

/** One sale, as the deduct recorded it: everything the order row needs. */
export interface OutboxOrder {
  orderId: string;
  productId: string;
  userId: string;
  quantity: number;
  segment: number;
  homeSegment: number;
  epoch: number;
  /** Redis server time of the deduct, ms */
  deductedAt: number;
  /** stream entry id in the segment's outbox */
  outboxId: string;
}

/** The outbox entry a purchase wrote, rebuilt from the deduct's reply (no read back). */
export function outboxOrderOf(p: Purchase): OutboxOrder {
  return { ...p, deductedAt: streamIdMs(p.outboxId) };
}

type StreamEntry = [id: string, fields: string[]];

export function decodeEntry([id, f]: StreamEntry): OutboxOrder {
  const m: Record<string, string> = {};
  for (let i = 0; i + 1 < f.length; i += 2) m[f[i]!] = f[i + 1]!;
  return {
    orderId: m.o!,
    productId: m.p!,
    userId: m.u!,
    quantity: Number(m.q),
    segment: Number(m.s),
    homeSegment: Number(m.h),
    epoch: Number(m.e),
    deductedAt: Number(m.t),
    outboxId: id,
  };
}

/**
 * Entries of a segment's outbox, oldest first.
 * @param o.until - stream id (or ms) of the newest entry to read; default: all.
 * @param o.count - most entries to read; default all.
 */
export async function readOutbox(
  redis: Redis,
  keys: Keys,
  productId: string,
  segment: number,
  o: { until?: string; count?: number } = {},
): Promise<OutboxOrder[]> {
  const k = keys.segment(productId, segment).outbox;
  const entries = (
    o.count
      ? await redis.xrange(k, '-', o.until ?? '+', 'COUNT', o.count)
      : await redis.xrange(k, '-', o.until ?? '+')
  ) as StreamEntry[];
  return entries.map(decodeEntry);
}

/** Deletes persisted orders from their segments' outboxes (one pipeline). */
export async function clearOutbox(
  redis: Redis,
  keys: Keys,
  orders: readonly OutboxOrder[],
): Promise<void> {
  const bySegment = new Map<string, string[]>();
  for (const o of orders) {
    const k = keys.segment(o.productId, o.segment).outbox;
    let ids = bySegment.get(k);
    if (!ids) bySegment.set(k, (ids = []));
    ids.push(o.outboxId);
  }
  const pipeline = redis.pipeline();
  for (const [k, ids] of bySegment) pipeline.xdel(k, ...ids);
  for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
}
