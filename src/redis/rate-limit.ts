/**
 * Rate limits shared by every API process: one GCRA script per request and limit
 * (lua/rateLimit-1.lua). Chosen over a library (rate-limiter-flexible) because it is one
 * EVALSHA on one key (one Cluster slot, no MULTI), the clock is Redis's, and the script sits with
 * the product's other atomic operations; the library's Redis store does the same work in more
 * round trips or its own Lua.
 *
 * Tolerance: GCRA lets a client through `burst` requests at once from an idle start, then one per
 * `period / rate`: over T seconds at most `burst + floor(T * rate)` pass, exactly.
 */
import type { RedisClient } from './connection.js';
import type { RateLimit } from '../config/index.js';
import { luaScript } from './scripts.js';

const script = luaScript('rateLimit', { allowed: 0, limited: 1 });
const peekScript = luaScript('rateLimitPeek', { allowed: 0, limited: 1 });

export interface RateDecision {
  allowed: boolean;
  /** requests left in the bucket after this one */
  remaining: number;
  /** ms until the bucket is full again */
  resetMs: number;
  /** refused: ms until a request would pass */
  retryMs: number;
  /** cells taken: 1 for a request, up to the cells wanted for a lease; 0 when refused */
  taken: number;
  /** allowed: ms until one cell more would pass, 0 while the bucket holds more */
  nextMs: number;
}

export const intervalUs = (limit: RateLimit) => Math.round((limit.periodMs * 1_000) / limit.rate);

/**
 * Whether one request would pass `key`'s bucket under `limit` now, without taking it.
 * @returns 0 when it would pass, else ms until it would
 */
export async function peekRate(redis: RedisClient, key: string, limit: RateLimit): Promise<number> {
  const r = await peekScript.run<number[]>(redis, [key], [intervalUs(limit), limit.burst]);
  return peekScript.replyName(r[0]!) === 'allowed' ? 0 : Math.max(1, Math.ceil(r[1]! / 1_000));
}

/**
 * Takes one request from `key`'s bucket under `limit`, or up to `want` cells at once (a local
 * allowance's lease: as many as the bucket holds, at least one).
 */
export async function takeRate(
  redis: RedisClient,
  key: string,
  limit: RateLimit,
  want = 1,
): Promise<RateDecision> {
  const args = [intervalUs(limit), limit.burst];
  if (want !== 1) args.push(want);
  const r = await script.run<number[]>(redis, [key], args);
  return rateDecision(script.replyName(r[0]!) === 'allowed', r);
}

/**
 * A GCRA take's reply (includes/gcra.lua): `[code, remaining, resetUs, retryUs, taken]`, the
 * code already read. Shared with the deduct, which takes a shopper's cell in its own call.
 */
export function rateDecision(allowed: boolean, reply: readonly number[]): RateDecision {
  const [, remaining, resetUs, retryUs, taken] = reply;
  return {
    allowed,
    remaining: allowed ? remaining! : 0,
    resetMs: Math.ceil(resetUs! / 1_000),
    retryMs: allowed ? 0 : Math.ceil(retryUs! / 1_000),
    taken: allowed ? (taken ?? 1) : 0,
    nextMs: allowed ? Math.ceil(retryUs! / 1_000) : 0,
  };
}
