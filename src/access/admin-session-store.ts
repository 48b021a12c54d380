/**
 * The admin routes' shared state in Redis: the wrong-token bucket of each client address and the
 * session keys (a key lives as long as its session; deleting it logs the session out everywhere).
 */
import type { RateLimit } from '../config/index.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { peekRate, takeRate, type RateDecision } from '../redis/rate-limit.js';

export class AdminSessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
  ) {}

  /** 0 when one more wrong token from `address` would pass, else ms until it would. */
  peekGuess(address: string, limit: RateLimit): Promise<number> {
    return peekRate(this.redis, this.keys.adminGuesses(address), limit);
  }

  /** Counts one wrong token from `address`. */
  takeGuess(address: string, limit: RateLimit): Promise<RateDecision> {
    return takeRate(this.redis, this.keys.adminGuesses(address), limit);
  }

  async create(id: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.keys.adminSession(id), '1', 'PX', ttlMs);
  }

  async exists(id: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.adminSession(id))) > 0;
  }

  async remove(id: string): Promise<void> {
    await this.redis.del(this.keys.adminSession(id));
  }
}
