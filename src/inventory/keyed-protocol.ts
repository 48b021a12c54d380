/**
 * The gateway of the Idempotency-Key scripts: the records' claim, compare-and-set and settle
 * (lua/idempotencyClaim-3.lua, idempotencySwap-1.lua, idempotencySettle-3.lua), and the home
 * deduct that reads and writes the key's record in its own call (lua/deductKeyed-10.lua,
 * deductKeyedFree-14.lua): their key order, arguments and reply tables, and the decoding of
 * their replies. The record's value is opaque here: records/idempotency-record.ts encodes it.
 */
import type { RedisClient } from '../redis/connection.js';
import type { SegmentKeys } from '../redis/keys.js';
import { luaScript } from '../redis/scripts.js';
import { decodeBucket, decodeDeduct, DEDUCT_REPLY, type Raw } from './deduct-reply.js';
import { deductArgs, deductKeys, type DeductArgs, type DeductReply } from './protocol.js';

const KEYED_REPLY = { ...DEDUCT_REPLY, record: 14, full: 15 } as const;
const scripts = {
  deductKeyed: luaScript('deductKeyed', KEYED_REPLY),
  deductKeyedFree: luaScript('deductKeyedFree', KEYED_REPLY),
  claim: luaScript('idempotencyClaim', { claimed: 0, exists: 1, full: 2 }),
  swap: luaScript('idempotencySwap'),
  settle: luaScript('idempotencySettle'),
};

/**
 * A key's record as the home deduct writes it: where it lives, and its two possible values,
 * encoded by the record store (the format stays records/idempotency-record.ts's).
 */
export interface FoldedRecord {
  /** the record, the shopper's index of records, of final refusals */
  keys: [string, string, string];
  /** the record's name in the index */
  member: string;
  /** the home segment whose slot the record shares */
  segment: number;
  /** the finished record (the sale's answer), written on a sale */
  done: string;
  /** the running record (leased), written on a spill claim */
  running: string;
  ttlSeconds: number;
  /** records a shopper may hold */
  cap: number;
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

/** Where a claimed record lives: the record, the shopper's two indexes, its name in them. */
export interface RecordPlace {
  key: string;
  index: { keys: [string, string]; member: string };
}

export type ClaimReply =
  { code: 'claimed' } | { code: 'exists'; value: string } | { code: 'full'; retryAfterMs: number };

/** Claims the key with the running record `value`, within the shopper's cap of records. */
export async function claimRecord(
  redis: RedisClient,
  place: RecordPlace,
  claim: { value: string; ttlSeconds: number; cap: number; prefix: string },
): Promise<ClaimReply> {
  const [code, value] = await scripts.claim.run<[number, string | number]>(
    redis,
    [place.key, ...place.index.keys],
    [claim.value, claim.ttlSeconds, claim.cap, place.index.member, claim.prefix],
  );
  switch (scripts.claim.replyName(code)) {
    case 'claimed':
      return { code: 'claimed' };
    case 'full':
      return { code: 'full', retryAfterMs: Math.max(0, Number(value)) };
    case 'exists':
      return { code: 'exists', value: String(value) };
  }
}

/** Replaces the record `key` only if it still holds `expected`. @returns whether it did. */
export async function swapRecord(
  redis: RedisClient,
  key: string,
  expected: string,
  replacement: string,
): Promise<boolean> {
  return (await scripts.swap.run<number>(redis, [key], [expected, replacement])) === 1;
}

/**
 * How a claimed record's request ended: `store` its value, `refused` (a final refusal, evictable
 * at the cap from now on), or `forget` it (the retry runs again).
 */
export async function settleRecord(
  redis: RedisClient,
  place: RecordPlace,
  mode: 'store' | 'refused' | 'forget',
  value: string,
): Promise<void> {
  await scripts.settle.run(
    redis,
    [place.key, ...place.index.keys],
    [mode, value, place.index.member],
  );
}
