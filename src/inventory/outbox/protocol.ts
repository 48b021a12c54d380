/**
 * The gateway of the outbox's scripts: the cut of a segment's outbox (lua/outboxCut-1.lua), the
 * resolution of an order whose purchase got no answer (lua/resolveOrder-3.lua), the settle of a
 * spill claim (lua/claimSettle-2.lua), and a closed order's return (lua/saleHeld-2.lua,
 * lua/restock-3.lua, lua/releaseMarker-1.lua); each with its key order, arguments and reply
 * table, and the decoding of its reply. The sale settles its spill claims through this door too.
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../../redis/connection.js';
import type { SegmentKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';

const scripts = {
  claimSettle: luaScript('claimSettle', { settled: 0, noClaim: 1 }),
  resolveOrder: luaScript('resolveOrder', { sold: 0, pending: 1, voided: 2 }),
  outboxCut: luaScript('outboxCut'),
  saleHeld: luaScript('saleHeld'),
  restock: luaScript('restock', { restocked: 0, already: 1, staleEpoch: 2, lost: 3, ended: 4 }),
  releaseMarker: luaScript('releaseMarker'),
};

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
