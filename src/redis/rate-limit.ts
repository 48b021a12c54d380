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
}

const intervalUs = (limit: RateLimit) => Math.round((limit.periodMs * 1_000) / limit.rate);

/**
 * Whether one request would pass `key`'s bucket under `limit` now, without taking it.
 * @returns 0 when it would pass, else ms until it would
 */
export async function peekRate(redis: RedisClient, key: string, limit: RateLimit): Promise<number> {
  const r = await peekScript.run<number[]>(redis, [key], [intervalUs(limit), limit.burst]);
  return peekScript.replyName(r[0]!) === 'allowed' ? 0 : Math.max(1, Math.ceil(r[1]! / 1_000));
}

/** Takes one request from `key`'s bucket under `limit`. */
export async function takeRate(
  redis: RedisClient,
  key: string,
  limit: RateLimit,
): Promise<RateDecision> {
  const r = await script.run<number[]>(redis, [key], [intervalUs(limit), limit.burst]);
  const allowed = script.replyName(r[0]!) === 'allowed';
  return {
    allowed,
    remaining: r[1]!,
    resetMs: Math.ceil(r[2]! / 1_000),
    retryMs: allowed ? 0 : Math.ceil(r[3]! / 1_000),
  };
}
