/**
 * The gateway of the sale's scripts: the deduct (lua/deduct-7.lua), the deduct of a free lock
 * (lua/deductFree-11.lua) and the home deduct that reads and writes an Idempotency-Key record in
 * its own call (lua/deductKeyed-10.lua, deductKeyedFree-14.lua); each with its key order,
 * arguments and reply table, and the decoding of its reply into a typed result (deduct-reply.ts
 * holds the deduct's table). Lua holds the protocol; callers never see a KEYS array. The other
 * rooms' scripts have their rooms' gateways, each a protocol.ts: the catalogue's, the outbox's,
 * the Idempotency-Key records', the waiting room's, the drop's.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { SegmentKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';
import { TOUCH_LEASE_MS } from '../activity-timing.js';
import type { FoldedRecord } from '../records/idempotency-record.js';
import {
  decodeBucket,
  DEDUCT_REPLY,
  decodeDeduct,
  PURCHASE_ROUTE,
  type DeductReply,
  type Raw,
} from './deduct-reply.js';

export { PURCHASE_ROUTE, type DeductReply } from './deduct-reply.js';

const KEYED_REPLY = { ...DEDUCT_REPLY, record: 14, full: 15 } as const;
const scripts = {
  deduct: luaScript('deduct', DEDUCT_REPLY),
  deductFree: luaScript('deductFree', DEDUCT_REPLY),
  deductKeyed: luaScript('deductKeyed', KEYED_REPLY),
  deductKeyedFree: luaScript('deductKeyedFree', KEYED_REPLY),
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

/** The keyed deduct's answer: the deduct's, or the record the key held, or the cap reached. */
export type KeyedReply =
  | DeductReply
  | { code: 'record'; value: string }
  | { code: 'full'; bucket?: DeductReply['bucket'] };

/**
 * `record` is answered before the deduct runs: no bucket state follows it. `full` comes at a spill
 * claim, so after the shopper's cell when one was asked: its state follows, as after a deduct's.
 */
function decodeKeyed(raw: Raw): KeyedReply {
  const name = scripts.deductKeyed.replyName(raw[0]);
  if (name === 'record') return { code: 'record', value: String(raw[1]) };
  if (name === 'full') {
    const last = raw[raw.length - 1];
    return Array.isArray(last) ? { code: 'full', bucket: decodeBucket(last) } : { code: 'full' };
  }
  return decodeDeduct(raw);
}

/**
 * The home deduct with the key's record read and written in the same call; `lockFree`: the
 * segment's lock taken and given back in it (deductKeyedFree).
 */
export async function deductKeyed(
  redis: RedisClient,
  segment: SegmentKeys,
  args: DeductArgs,
  record: FoldedRecord,
  lockFree: boolean,
): Promise<KeyedReply> {
  const keys = deductKeys(segment, args);
  const lock = segment.lock;
  if (lockFree) keys.push(lock.lock, lock.fence, lock.queue, lock.handoff);
  keys.push(...record.keys);
  const argv = deductArgs(args);
  argv.push(record.done, record.running, record.ttlSeconds, record.cap, record.member);
  const script = lockFree ? scripts.deductKeyedFree : scripts.deductKeyed;
  return decodeKeyed(await script.run<Raw>(redis, keys, argv));
}
