/**
 * The active set: the products that may have work for the sweeper (outbox entries, open spill
 * claims). The catalogue only grows; this set holds the sales being seeded, sold or settled, and
 * lets the quiet ones go (archived: still in the catalogue, readable and reconcilable).
 *
 * A Redis Cluster cannot add to one set atomically from a segment's script (other slot), so the
 * set is kept by leases instead (activity-timing.ts): a purchase touches the product
 * (lua/activeTouch-1.lua) before its deduct, which refuses a touch older than its lease; the
 * sweeper archives (lua/activeArchive-1.lua) only a product whose time ran out well before its
 * read found no work, and only if nobody touched it since.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { QUIET_MS } from '../activity-timing.js';
import { activeArchive, activeTouch } from '../protocol.js';

/**
 * Keeps `productId` active until at least `untilMs` (its sale's start or end) plus the quiet
 * period, and at least the quiet period from now. @returns the Redis time of the touch.
 */
export async function touchActive(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  untilMs = 0,
): Promise<number> {
  return activeTouch(deps.redis, deps.keys.active(), productId, QUIET_MS, untilMs);
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
