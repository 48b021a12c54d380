/**
 * The active set: the products that may have work for the sweeper (outbox entries, open spill
 * claims). The catalogue only grows; this set holds the sales being seeded, sold or settled, and
 * lets the quiet ones go (archived: still in the catalogue, readable and reconcilable).
 *
 * A Redis Cluster cannot add to one set atomically from a segment's script (other slot), so the
 * set is kept by leases instead (activity-timing.ts): a purchase touches the product
 * (lua/activeTouch-2.lua) before its deduct, which refuses a touch older than its lease; the
 * sweeper archives (lua/activeArchive-1.lua) only a product whose time ran out well before its
 * read found no work, and only if nobody touched it since.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { QUIET_MS, SKEW_MS, TOUCH_LEASE_MS } from '../activity-timing.js';
import { activeArchive, activeTouch } from './protocol.js';

/**
 * Keeps `productId` active until at least `untilMs` (its sale's start or end) plus the quiet
 * period, and at least the quiet period from now. @returns the Redis time of the touch.
 */
export async function touchActive(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  untilMs = 0,
): Promise<number> {
  const touches = deps.keys.activity().touches;
  return activeTouch(
    deps.redis,
    { active: deps.keys.active(), touches },
    productId,
    QUIET_MS,
    untilMs,
  );
}

/** What the sweeper knows of each active product's quiet: its last touch, and its last quiet read. */
export interface Quiet {
  /** product id -> Redis ms of its last touch (none: touched before touches were recorded) */
  touchedAt: Map<string, number>;
  /** product id -> when a sweep found it without work, and its active score then */
  foundQuiet: Map<string, { at: number; until: number }>;
}

/** Reads the touches and the quiet marks (two commands, whatever the number of products). */
export async function readQuiet(deps: { redis: RedisClient; keys: Keys }): Promise<Quiet> {
  const { touches, quiet } = deps.keys.activity();
  const [flat, marks] = await Promise.all([
    deps.redis.zrange(touches, '0', '-1', 'WITHSCORES'),
    deps.redis.hgetall(quiet),
  ]);
  const touchedAt = new Map<string, number>();
  for (let i = 0; i < flat.length; i += 2) touchedAt.set(flat[i]!, Number(flat[i + 1]));
  const foundQuiet = new Map<string, { at: number; until: number }>();
  for (const [productId, mark] of Object.entries(marks)) {
    const [at, until] = mark.split(':').map(Number) as [number, number];
    if (Number.isFinite(at) && Number.isFinite(until)) foundQuiet.set(productId, { at, until });
  }
  return { touchedAt, foundQuiet };
}

/** A sweep read every segment of `productId` after `at` (Redis ms) and found no work. */
export async function markQuiet(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  at: number,
  until: number,
): Promise<void> {
  await deps.redis.hset(deps.keys.activity().quiet, productId, `${at}:${until}`);
}

/** Forgets an archived product's touch and quiet mark. */
export async function forgetQuiet(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
): Promise<void> {
  const { touches, quiet } = deps.keys.activity();
  await Promise.all([deps.redis.zrem(touches, productId), deps.redis.hdel(quiet, productId)]);
}

/** Archives `productId` unless it was touched since its score read `score`. */
export async function archiveIfUntouched(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  score: number,
): Promise<boolean> {
  return activeArchive(deps.redis, deps.keys.active(), productId, score);
}

/** The active products with the time each stays until (ms), or the `max` that stay longest. */
export async function activeProducts(
  deps: { redis: RedisClient; keys: Keys },
  max?: number,
): Promise<Array<{ productId: string; until: number }>> {
  const flat =
    max === undefined
      ? await deps.redis.zrange(deps.keys.active(), '0', '-1', 'WITHSCORES')
      : await deps.redis.zrange(
          deps.keys.active(),
          '+inf',
          '-inf',
          'BYSCORE',
          'REV',
          'LIMIT',
          0,
          max,
          'WITHSCORES',
        );
  const out: Array<{ productId: string; until: number }> = [];
  for (let i = 0; i < flat.length; i += 2) {
    out.push({ productId: flat[i]!, until: Number(flat[i + 1]) });
  }
  return out;
}

/**
 * Whether `productId` can have no work a sweep has not seen: a sweep read every segment after
 * `foundQuiet.at` and found none, its active score is the same, and it was not touched since a
 * lease (plus the clocks' skew) before that read. Any deduct runs under a touch at most a lease
 * old (activeTouch, the deduct's check), so work written after the read has a touch after this.
 */
export function untouchedSinceQuiet(known: Quiet, productId: string, until: number): boolean {
  const found = known.foundQuiet.get(productId);
  const touched = known.touchedAt.get(productId);
  return (
    found !== undefined &&
    touched !== undefined &&
    found.until === until &&
    touched < found.at - TOUCH_LEASE_MS - SKEW_MS
  );
}
