/**
 * Admin side of the inventory: seed a product's stock over its segments, and read back what each
 * segment holds. Seeding opens a new epoch (lua/beginSeed-1.lua refuses while the sale is live
 * unless forced), seeds every segment (lua/seedSegment-3.lua), tells every API process, and
 * records the product in PostgreSQL.
 */
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { Strategy } from '../db/schema.js';
import type { Keys } from '../redis/keys.js';
import { timeReplyMs } from '../redis/time.js';
import type { Catalog } from './catalog.js';
import { SaleError } from './errors.js';
import { splitStock } from './layout.js';
import { beginSeed, queueSeedSegment } from './protocol.js';

export interface SeedSpec {
  total: number;
  /** 1..1024; `global` takes 1 */
  segments: number;
  strategy: Strategy;
  startsAt?: Date | undefined;
  endsAt?: Date | undefined;
  /** default 1 */
  limitPerUser?: number | undefined;
}

export interface SeedResult {
  productId: string;
  epoch: number;
  segments: number[];
}

export interface InventoryDeps {
  redis: Redis;
  keys: Keys;
  db: Db;
  catalog?: Catalog;
}

/**
 * Seeds (or reseeds) a product: `total / segments` units per segment, the remainder one apiece on
 * the first ones. Segments a previous epoch had beyond the new count are emptied.
 * @throws SaleError `sale-live` when the current sale is running and `force` is not set.
 */
export async function seedProduct(
  d: InventoryDeps,
  productId: string,
  spec: SeedSpec,
  opts: { force?: boolean } = {},
): Promise<SeedResult> {
  const startsAt = spec.startsAt?.getTime() ?? 0;
  const endsAt = spec.endsAt?.getTime() ?? 0;
  const limitPerUser = spec.limitPerUser ?? 1;
  const begun = await beginSeed(
    d.redis,
    d.keys.product(productId),
    { ...spec, startsAt, endsAt, limitPerUser },
    opts.force ?? false,
  );
  if (begun.code === 'live') {
    throw new SaleError({
      code: 'sale-live',
      message: `the sale of "${productId}" (epoch ${begun.epoch}) is live; add ?force=true to reseed it anyway`,
    });
  }
  const stocks = splitStock(spec.total, spec.segments);
  const pipeline = d.redis.pipeline();
  for (let i = 0; i < Math.max(spec.segments, begun.previousSegments); i++) {
    queueSeedSegment(pipeline, d.keys.segment(productId, i), {
      epoch: begun.epoch,
      stock: stocks[i] ?? 0,
      startsAt,
      endsAt,
      limitPerUser,
    });
  }
  for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
  await d.redis.sadd(d.keys.products(), productId);
  if (d.catalog) await d.catalog.announceReseed(productId, begun.epoch);
  else await d.redis.spublish(d.keys.product(productId).events, `reseed ${begun.epoch}`);

  const row = {
    total: spec.total,
    segments: spec.segments,
    strategy: spec.strategy,
    limit_per_user: limitPerUser,
    starts_at: spec.startsAt ?? null,
    ends_at: spec.endsAt ?? null,
    epoch: begun.epoch,
  };
  await d.db
    .insertInto('products')
    .values({ id: productId, ...row })
    .onConflict((oc) => oc.column('id').doUpdateSet({ ...row, updated_at: sql`now()` }))
    .execute();
  return { productId, epoch: begun.epoch, segments: stocks };
}

export interface SegmentState {
  segment: number;
  stock: number;
  sold: number;
  /** orders in this segment's outbox, not yet confirmed persisted */
  pending: number;
}

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
  status: 'upcoming' | 'live' | 'sold out' | 'ended';
  segments: SegmentState[];
}

/** Reads a product's meta and every segment (one pipeline); null when never seeded. */
export async function readProductState(
  d: Pick<InventoryDeps, 'redis' | 'keys'>,
  productId: string,
): Promise<ProductState | null> {
  const meta = await d.redis.hgetall(d.keys.product(productId).meta);
  if (!meta.epoch) return null;
  const n = Number(meta.segments);
  const pipeline = d.redis.pipeline();
  for (let i = 0; i < n; i++) {
    const k = d.keys.segment(productId, i);
    pipeline.hmget(k.state, 'stock', 'sold').xlen(k.outbox);
  }
  pipeline.time();
  const replies = (await pipeline.exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
  const segments: SegmentState[] = [];
  for (let i = 0; i < n; i++) {
    const [stock, sold] = replies[2 * i]![1] as [string | null, string | null];
    segments.push({
      segment: i,
      stock: Number(stock ?? 0),
      sold: Number(sold ?? 0),
      pending: replies[2 * i + 1]![1] as number,
    });
  }
  const now = timeReplyMs(replies[2 * n]![1] as [string, string]);
  const epoch = Number(meta.epoch);
  const remaining = segments.reduce((a, s) => a + s.stock, 0);
  const startsAt = Number(meta.startsAt);
  const endsAt = Number(meta.endsAt);
  const status =
    endsAt > 0 && now >= endsAt
      ? 'ended'
      : remaining === 0
        ? 'sold out'
        : now < startsAt
          ? 'upcoming'
          : 'live';
  return {
    productId,
    epoch,
    total: Number(meta.total),
    strategy: meta.strategy as Strategy,
    limitPerUser: Number(meta.limit),
    startsAt,
    endsAt,
    soldOut: Number(meta.soldOut) === epoch || remaining === 0,
    remaining,
    sold: segments.reduce((a, s) => a + s.sold, 0),
    status,
    segments,
  };
}
