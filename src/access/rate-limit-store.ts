/**
 * The rate-limit buckets in Redis (lua/rateLimit-1.lua, lua/rateLimitPeek-1.lua via
 * redis/rate-limit.ts): the services name a route, a scope and a limit; the key is chosen here.
 * A client address's bucket is spent through this process's local allowance (rate-allowance.ts).
 */
import type { RateLimit } from '../config/index.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { takeRate, type RateDecision } from '../redis/rate-limit.js';
import { RateAllowances } from './rate-allowance.js';

export type { RateDecision } from '../redis/rate-limit.js';

export class RateLimitStore {
  /** client addresses' buckets, leased several cells at a time */
  private readonly allowances: RateAllowances;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {
    this.allowances = new RateAllowances((key, limit, want) =>
      takeRate(this.redis, key, limit, want),
    );
  }

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
    if (scope === 'ip') return this.allowances.take(this.keys.rateLimit(route, scope, id), limit);
    const key = home
      ? this.keys.shopperRateLimit(route, home.productId, home.segment, id)
      : this.keys.rateLimit(route, scope, id);
    return takeRate(this.redis, key, limit);
  }
}
