/**
 * The gateway of the Idempotency-Key records' scripts: their claim, compare-and-set and settle
 * (lua/idempotencyClaim-3.lua, idempotencySwap-1.lua, idempotencySettle-3.lua): their key order,
 * arguments and reply tables, and the decoding of their replies. The record's value is opaque
 * here: records/idempotency-record.ts encodes it. The home deduct that writes a record in its own
 * call is the sale's (sale/protocol.ts).
 */
import type { RedisClient } from '../../redis/connection.js';
import { luaScript } from '../../redis/scripts.js';

const scripts = {
  claim: luaScript('idempotencyClaim', { claimed: 0, exists: 1, full: 2 }),
  swap: luaScript('idempotencySwap'),
  settle: luaScript('idempotencySettle'),
};

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
