/**
 * One sale in a segment's outbox stream, as lua/deduct-7.lua appends it (fields o p u q s h t e w).
 * It is the durable record of a sale until its order row exists; the order workers persist it
 * and only then delete it.
 */
import { streamIdMs } from '../../redis/time.js';

/** A sold order: what the deduct recorded, everything the order row needs. */
export interface SoldOrder {
  orderId: string;
  productId: string;
  userId: string;
  quantity: number;
  /** the segment whose stock it took */
  segment: number;
  /** the shopper's home segment (where the marker is) */
  homeSegment: number;
  epoch: number;
  /** Redis server time of the deduct, ms */
  deductedAt: number;
  /** stream entry id in the segment's outbox */
  outboxId: string;
  /** seconds the buyer has to pay (from the deduct on); 0: a final sale */
  payWithinSeconds: number;
}

export type StreamEntry = [id: string, fields: string[]];

export function decodeOutboxEntry([id, f]: StreamEntry): SoldOrder {
  const m: Record<string, string> = {};
  for (let i = 0; i + 1 < f.length; i += 2) m[f[i]!] = f[i + 1]!;
  if (m.o === undefined || m.p === undefined || m.u === undefined) {
    throw new Error(`not an outbox entry: ${id} ${JSON.stringify(f)}`);
  }
  return {
    orderId: m.o,
    productId: m.p,
    userId: m.u,
    quantity: Number(m.q),
    segment: Number(m.s),
    homeSegment: Number(m.h),
    epoch: Number(m.e),
    // the stream id, not the script's `t` field: the API's answer (soldOrder) reads the same id, and
    // XADD may tick a millisecond past the script's TIME, so the two would disagree by 1 ms
    deductedAt: streamIdMs(id),
    outboxId: id,
    payWithinSeconds: Number(m.w ?? 0),
  };
}

/** The order a deduct reply describes: its outbox id carries the deduct's server time. */
export function soldOrder(order: Omit<SoldOrder, 'deductedAt'>): SoldOrder {
  return { ...order, deductedAt: streamIdMs(order.outboxId) };
}
