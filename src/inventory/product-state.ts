/**
 * A product as it stands in Redis: its meta and every segment's stock, units sold and outbox
 * backlog, read in one pipeline, with the status by Redis server time.
 */
import type { Redis } from 'ioredis';
import type { Strategy } from '../db/schema.js';
import type { Keys } from '../redis/keys.js';
import { timeReplyMs } from '../redis/time.js';
import { decodeMeta, isSoldOut, type ProductMeta } from './records/product-meta.js';
import { decodeSegmentState, SEGMENT_STATE_FIELDS } from './records/segment-state.js';

export interface SegmentView {
  segment: number;
  stock: number;
  sold: number;
  /** orders in this segment's outbox, not yet confirmed persisted */
  pending: number;
}

export type ProductStatus = 'upcoming' | 'live' | 'sold out' | 'ended';

export interface ProductState {
  productId: string;
  epoch: number;
  total: number;
  strategy: Strategy;
  limitPerUser: number;
  startsAt: number;
  endsAt: number;
  soldOut: boolean;
  remaining: number;
  sold: number;
  status: ProductStatus;
  segments: SegmentView[];
}

export interface StoreDeps {
  redis: Redis;
  keys: Keys;
}

/** The product's meta; null when it was never seeded. */
export async function readMeta(deps: StoreDeps, productId: string): Promise<ProductMeta | null> {
  return decodeMeta(await deps.redis.hgetall(deps.keys.product(productId).meta));
}

function statusAt(now: number, meta: ProductMeta, remaining: number): ProductStatus {
  if (meta.endsAt > 0 && now >= meta.endsAt) return 'ended';
  if (remaining === 0) return 'sold out';
  return now < meta.startsAt ? 'upcoming' : 'live';
}

/** Reads a product's meta and every segment (one pipeline); null when never seeded. */
export async function readProductState(
  deps: StoreDeps,
  productId: string,
): Promise<ProductState | null> {
  const meta = await readMeta(deps, productId);
  if (!meta) return null;
  const n = meta.segments;
  const pipeline = deps.redis.pipeline();
  for (let i = 0; i < n; i++) {
    const k = deps.keys.segment(productId, i);
    pipeline.hmget(k.state, ...SEGMENT_STATE_FIELDS).xlen(k.outbox);
  }
  pipeline.time();
  const replies = (await pipeline.exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
  const segments: SegmentView[] = [];
  for (let i = 0; i < n; i++) {
    const state = decodeSegmentState(replies[2 * i]![1] as Array<string | null>);
    segments.push({
      segment: i,
      stock: state?.stock ?? 0,
      sold: state?.sold ?? 0,
      pending: replies[2 * i + 1]![1] as number,
    });
  }
  const now = timeReplyMs(replies[2 * n]![1] as [string, string]);
  const remaining = segments.reduce((a, s) => a + s.stock, 0);
  return {
    productId,
    epoch: meta.epoch,
    total: meta.total,
    strategy: meta.strategy,
    limitPerUser: meta.limitPerUser,
    startsAt: meta.startsAt,
    endsAt: meta.endsAt,
    soldOut: isSoldOut(meta) || remaining === 0,
    remaining,
    sold: segments.reduce((a, s) => a + s.sold, 0),
    status: statusAt(now, meta, remaining),
    segments,
  };
}
