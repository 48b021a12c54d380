/**
 * The gateway of the sale's scripts: the deduct and the spill claim's settle, seeding and the
 * sold-out flag, the resolution and return of an order, the outbox's cut, the active set and
 * catalogue numbers; each with its key order, arguments and reply table, and the decoding of its
 * reply into a typed result. Lua (lua/deduct-7.lua and the rest of `scripts` below) holds the
 * protocol; callers never see a KEYS array. The Idempotency-Key scripts have their own gateway
 * (keyed-protocol.ts), as the room's (rooms/protocol.ts), the lock's (lock/protocol.ts) and the
 * rate limits' (redis/rate-limit.ts).
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import type { ProductKeys, SegmentKeys } from '../redis/keys.js';
import { luaScript } from '../redis/scripts.js';
import { TOUCH_LEASE_MS } from './activity-timing.js';
import {
  DEDUCT_REPLY,
  decodeDeduct,
  PURCHASE_ROUTE,
  type DeductReply,
  type Raw,
} from './deduct-reply.js';

export { PURCHASE_ROUTE, type DeductReply } from './deduct-reply.js';
export { setWindow, type WindowReply } from './window-protocol.js';

const scripts = {
  deduct: luaScript('deduct', DEDUCT_REPLY),
  deductFree: luaScript('deductFree', DEDUCT_REPLY),
  claimSettle: luaScript('claimSettle', { settled: 0, noClaim: 1 }),
  seedSegment: luaScript('seedSegment'),
  beginSeed: luaScript('beginSeed', { begun: 0, live: 1 }),
  markSoldOut: luaScript('markSoldOut'),
  resolveOrder: luaScript('resolveOrder', { sold: 0, pending: 1, voided: 2 }),
  outboxCut: luaScript('outboxCut'),
  saleHeld: luaScript('saleHeld'),
  restock: luaScript('restock', { restocked: 0, already: 1, staleEpoch: 2, lost: 3, ended: 4 }),
  releaseMarker: luaScript('releaseMarker'),
  clearSoldOut: luaScript('clearSoldOut'),
  activeTouch: luaScript('activeTouch'),
  activeArchive: luaScript('activeArchive'),
  catalogueNumber: luaScript('catalogueNumber'),
};

export type DeductMode = 'home' | 'claim' | 'spill';

export interface DeductArgs {
  mode: DeductMode;
  epoch: number;
  /** Fencing token of the segment lock held, 0 without a lock. */
  fence: number;
  userId: string;
  quantity: number;
  orderId: string;
  productId: string;
  segment: number;
  homeSegment: number;
  /** Redis time of this process's latest touch of the product (sale/activity-leases.ts) */
  touchedAt: number;
  /**
   * The shopper's bucket (KEYS[7], on {@link PURCHASE_ROUTE}) to take a cell of in this call: a
   * home call whose purchase has not taken it yet; none for limits off and for spills.
   */
  bucket?: { intervalUs: number; burst: number } | undefined;
}

export function deductKeys(keys: SegmentKeys, args: DeductArgs): string[] {
  return [
    keys.state,
    keys.buyers,
    keys.claims,
    keys.outbox,
    keys.voided(args.orderId),
    keys.spilled,
    keys.shopperRateLimit(PURCHASE_ROUTE, args.userId),
  ];
}

export function deductArgs(args: DeductArgs): Array<string | number> {
  return [
    args.mode,
    args.epoch,
    args.fence,
    args.userId,
    args.quantity,
    args.orderId,
    args.productId,
    args.segment,
    args.homeSegment,
    args.touchedAt,
    TOUCH_LEASE_MS,
    args.bucket?.intervalUs ?? 0,
    args.bucket?.burst ?? 0,
  ];
}

export async function deduct(
  redis: RedisClient,
  segmentKeys: SegmentKeys,
  args: DeductArgs,
): Promise<DeductReply> {
  return decodeDeduct(
    await scripts.deduct.run<Raw>(redis, deductKeys(segmentKeys, args), deductArgs(args)),
  );
}

/**
 * The deduct of a locked segment when its lock is free (lua/deductFree-11.lua): the lock taken,
 * fenced and given back in the same call; `contended` (nothing changed) when anyone holds, waits
 * for or is handed the lock. `args.fence` is ignored: the script bumps the lock's own counter.
 */
export async function deductFree(
  redis: RedisClient,
  segmentKeys: SegmentKeys,
  args: DeductArgs,
): Promise<DeductReply> {
  const lock = segmentKeys.lock;
  const keys = deductKeys(segmentKeys, args);
  keys.push(lock.lock, lock.fence, lock.queue, lock.handoff);
  return decodeDeduct(await scripts.deductFree.run<Raw>(redis, keys, deductArgs(args)));
}

export type OrderResolution = 'sold' | 'pending' | 'voided';

/**
 * Queues the read of an outbox's cut: the newest id ever added ("0-0" when never written). Call
 * registerScripts(connection) before making the pipeline.
 */
export function queueOutboxCut(pipeline: ChainableCommander, outbox: string): ChainableCommander {
  return scripts.outboxCut.queue(pipeline, [outbox], []);
}

/** What became of an order whose purchase got no answer (see lua/resolveOrder-3.lua). */
export async function resolveOrder(
  redis: RedisClient,
  home: SegmentKeys,
  userId: string,
  orderId: string,
  voidTtlSeconds: number,
): Promise<OrderResolution> {
  const r = await scripts.resolveOrder.run<number[]>(
    redis,
    [home.buyers, home.claims, home.voided(orderId)],
    [userId, orderId, voidTtlSeconds],
  );
  return scripts.resolveOrder.replyName(r[0]);
}

export type SettleReply = { code: 'settled'; units: number } | { code: 'no-claim' };

export async function claimSettle(
  redis: RedisClient,
  home: SegmentKeys,
  userId: string,
  orderId: string,
  outcome: 'finalise' | 'release',
): Promise<SettleReply> {
  const r = await scripts.claimSettle.run<number[]>(
    redis,
    [home.buyers, home.claims],
    [userId, orderId, outcome],
  );
  return scripts.claimSettle.replyName(r[0]) === 'settled'
    ? { code: 'settled', units: r[1]! }
    : { code: 'no-claim' };
}

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

export type RestockReply =
  | { code: 'restocked'; stock: number }
  | { code: 'already' }
  | { code: 'stale-epoch'; epoch: number }
  | { code: 'lost' } // a failover lost the sale before its return: recorded, nothing added
  | { code: 'ended' }; // a refund after its sale's end (or a reseed): nothing recorded or added

/**
 * A closed order's units back, once, while the sale is held: a home sale's by its home segment
 * (lua/saleHeld-2.lua), a spill's by the segment that gave the unit (lua/restock-3.lua). A
 * refund's only while its sale runs.
 */
export async function restock(
  redis: RedisClient,
  segmentKeys: SegmentKeys,
  home: SegmentKeys,
  order: { epoch: number; orderId: string; quantity: number; userId: string; refund?: boolean },
): Promise<RestockReply> {
  const held =
    segmentKeys.state === home.state
      ? await scripts.saleHeld.run<number>(
          redis,
          [home.buyers, home.claims],
          [order.userId, order.orderId],
        )
      : 'spill';
  const r = await scripts.restock.run<number[]>(
    redis,
    [segmentKeys.state, segmentKeys.returned, segmentKeys.spilled],
    [order.epoch, order.orderId, order.quantity, held, order.refund ? 'refund' : ''],
  );
  const code = scripts.restock.replyName(r[0]);
  if (code === 'restocked') return { code, stock: r[1]! };
  if (code === 'staleEpoch') return { code: 'stale-epoch', epoch: r[1]! };
  if (code === 'lost' || code === 'ended') return { code };
  return { code: 'already' };
}

/** Takes a returned order out of its buyer's marker (lua/releaseMarker-1.lua). */
export async function releaseMarker(
  redis: RedisClient,
  home: SegmentKeys,
  order: { userId: string; orderId: string; quantity: number },
): Promise<boolean> {
  return (
    (await scripts.releaseMarker.run<number>(
      redis,
      [home.buyers],
      [order.userId, order.orderId, order.quantity],
    )) === 1
  );
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
