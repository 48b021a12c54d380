/**
 * A product's meta hash: its sale configuration and epoch. Written by lua/beginSeed-1.lua (a new
 * epoch), lua/markSoldOut-1.lua and lua/clearSoldOut-1.lua; read by every process that serves or checks the product.
 */
import type { Strategy } from '../../db/schema.js';

export interface ProductMeta {
  epoch: number;
  total: number;
  segments: number;
  strategy: Strategy;
  /** ms since the epoch; 0 = from the seed on */
  startsAt: number;
  /** ms; 0 = open-ended */
  endsAt: number;
  limitPerUser: number;
  /** the epoch that was seen sold out, 0 when none */
  soldOutEpoch: number;
  /** the most segments any epoch had (older outboxes may hold orders still) */
  maxSegments: number;
  /** seconds buyers have to pay; 0: every sale is final */
  payWithinSeconds: number;
  /** a purchase needs a sale token */
  requireSaleToken: boolean;
  /** catalogue number, carried by order ids (order-ids.ts); 0 until given */
  number: number;
}

/** The meta of an HGETALL reply; null when the product was never seeded. */
export function decodeMeta(h: Record<string, string>): ProductMeta | null {
  if (!h.epoch) return null;
  const epoch = Number(h.epoch);
  return {
    epoch,
    total: Number(h.total),
    segments: Number(h.segments),
    strategy: h.strategy as Strategy,
    startsAt: Number(h.startsAt),
    endsAt: Number(h.endsAt),
    limitPerUser: Number(h.limit),
    soldOutEpoch: Number(h.soldOut ?? 0),
    maxSegments: Number(h.maxSegments ?? h.segments),
    payWithinSeconds: Number(h.payWithin ?? 0),
    requireSaleToken: h.token === '1',
    number: Number(h.n ?? 0),
  };
}

/** Hash fields of one meta field (what HGET / HMGET name). */
export const META_FIELD = {
  epoch: 'epoch',
  segments: 'segments',
  maxSegments: 'maxSegments',
  number: 'n',
} as const;

/**
 * Recorded sold out in this epoch, for good. A sale with a payment window is not: units come
 * back, and the mark may be older than the newest return, so its segments decide instead.
 */
export const isSoldOut = (m: ProductMeta) => m.soldOutEpoch === m.epoch && m.payWithinSeconds === 0;
