/**
 * The gateway of the catalogue's scripts: a product's seed (lua/beginSeed-1.lua,
 * lua/seedSegment-4.lua), its sold-out flag (lua/markSoldOut-1.lua, lua/clearSoldOut-1.lua), the
 * active set (lua/activeTouch-2.lua, lua/activeArchive-1.lua), catalogue numbers
 * (lua/catalogueNumber-1.lua) and a segment's sale window after its seed (lua/segmentWindow-1.lua:
 * a carrying reseed's opening here, an operator's pause, resume and end now through the drop);
 * each with its key order, arguments and reply table, and the decoding of its reply.
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../../redis/connection.js';
import type { ProductKeys, SegmentKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';

const scripts = {
  seedSegment: luaScript('seedSegment'),
  beginSeed: luaScript('beginSeed', { begun: 0, live: 1 }),
  markSoldOut: luaScript('markSoldOut'),
  clearSoldOut: luaScript('clearSoldOut'),
  activeTouch: luaScript('activeTouch'),
  activeArchive: luaScript('activeArchive'),
  catalogueNumber: luaScript('catalogueNumber'),
  segmentWindow: luaScript('segmentWindow', { set: 0, staleEpoch: 1 }),
};

export interface SegmentSeed {
  epoch: number;
  stock: number;
  startsAt: number;
  endsAt: number;
  limitPerUser: number;
  /** seconds buyers have to pay; 0: every sale is final */
  payWithinSeconds: number;
  /** answer the buyer markers it drops (the purchase counts a reseed carries) */
  carry?: boolean;
}

export function queueSeedSegment(
  pipeline: ChainableCommander,
  segmentKeys: SegmentKeys,
  seed: SegmentSeed,
): ChainableCommander {
  return scripts.seedSegment.queue(
    pipeline,
    [segmentKeys.state, segmentKeys.buyers, segmentKeys.claims, segmentKeys.spilled],
    [
      seed.epoch,
      seed.stock,
      seed.startsAt,
      seed.endsAt,
      seed.limitPerUser,
      seed.payWithinSeconds,
      seed.carry ? 1 : 0,
    ],
  );
}

export interface ProductSpec {
  total: number;
  segments: number;
  strategy: string;
  startsAt: number;
  endsAt: number;
  limitPerUser: number;
  payWithinSeconds: number;
  requireSaleToken: boolean;
}

export type BeginSeedReply =
  { code: 'begun'; epoch: number; previousSegments: number } | { code: 'live'; epoch: number };

export async function beginSeed(
  redis: RedisClient,
  productKeys: ProductKeys,
  spec: ProductSpec,
  force: boolean,
): Promise<BeginSeedReply> {
  const r = await scripts.beginSeed.run<number[]>(
    redis,
    [productKeys.meta],
    [
      force ? 1 : 0,
      spec.total,
      spec.segments,
      spec.strategy,
      spec.startsAt,
      spec.endsAt,
      spec.limitPerUser,
      spec.payWithinSeconds,
      spec.requireSaleToken ? 1 : 0,
    ],
  );
  return scripts.beginSeed.replyName(r[0]) === 'begun'
    ? { code: 'begun', epoch: r[1]!, previousSegments: r[2]! }
    : { code: 'live', epoch: r[1]! };
}

export async function markSoldOut(
  redis: RedisClient,
  productKeys: ProductKeys,
  epoch: number,
): Promise<boolean> {
  return (await scripts.markSoldOut.run<number>(redis, [productKeys.meta], [epoch])) === 1;
}

/** Units came back: the sale of `epoch` is no longer sold out (lua/clearSoldOut-1.lua). */
export async function clearSoldOut(
  redis: RedisClient,
  productKeys: ProductKeys,
  epoch: number,
): Promise<boolean> {
  return (await scripts.clearSoldOut.run<number>(redis, [productKeys.meta], [epoch])) === 1;
}

/**
 * Keeps `productId` in the active set (`active`) until at least `untilMs` plus `quietMs`, and at
 * least `quietMs` from now, and records the touch in `touches` (lua/activeTouch-2.lua).
 * @returns the Redis time of the touch.
 */
export async function activeTouch(
  redis: RedisClient,
  keys: { active: string; touches: string },
  productId: string,
  quietMs: number,
  untilMs: number,
): Promise<number> {
  return Number(
    await scripts.activeTouch.run(
      redis,
      [keys.active, keys.touches],
      [productId, quietMs, untilMs],
    ),
  );
}

/** Archives `productId` unless it was touched since its score read `score` (lua/activeArchive-1.lua). */
export async function activeArchive(
  redis: RedisClient,
  active: string,
  productId: string,
  score: number,
): Promise<boolean> {
  return (await scripts.activeArchive.run(redis, [active], [productId, score])) === 1;
}

/** `productId`'s catalogue number, given once for good (lua/catalogueNumber-1.lua). */
export async function catalogueNumber(
  redis: RedisClient,
  catalogue: string,
  productId: string,
): Promise<number> {
  return Number(await scripts.catalogueNumber.run(redis, [catalogue], [productId]));
}

export type WindowReply = { code: 'set' } | { code: 'stale-epoch'; epoch: number };

/** Sets a segment's startsAt and / or endsAt (undefined keeps each), in `epoch` only. */
export async function setWindow(
  redis: RedisClient,
  segment: SegmentKeys,
  epoch: number,
  window: { startsAt?: number | undefined; endsAt?: number | undefined },
): Promise<WindowReply> {
  const r = await scripts.segmentWindow.run<number[]>(
    redis,
    [segment.state],
    [epoch, window.startsAt ?? '', window.endsAt ?? ''],
  );
  return r[0] === 0 ? { code: 'set' } : { code: 'stale-epoch', epoch: r[1]! };
}
