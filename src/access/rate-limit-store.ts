/**
 * The rate-limit buckets in Redis (lua/rateLimit-1.lua, lua/rateLimitPeek-1.lua via
 * redis/rate-limit.ts): the services name a route, a scope and a limit; the key is chosen here.
 */
import type { RateLimit } from '../config/index.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { takeRate, type RateDecision } from '../redis/rate-limit.js';

export type { RateDecision } from '../redis/rate-limit.js';

export class RateLimitStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  /**
   * Takes one request from the bucket of `id` (a shopper or a client address) on `route`.
   * @param home - a shopper's home segment of the product bought: their bucket lives beside it
   */
  take(
    route: string,
    scope: 'user' | 'ip',
    id: string,
    limit: RateLimit,
    home?: { productId: string; segment: number },
  ): Promise<RateDecision> {
    const key =
      home && scope === 'user'
        ? this.keys.shopperRateLimit(route, home.productId, home.segment, id)
        : this.keys.rateLimit(route, scope, id);
    return takeRate(this.redis, key, limit);
  }
}
