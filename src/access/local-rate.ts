/**
 * A rate limit kept in this process's memory (GCRA on the local clock): no Redis command, so a
 * flood it refuses costs the store nothing. Per process: behind N API processes a client gets up
 * to N times the limit, which is what a limit on a route answered from memory can promise
 * (docs/waiting-room.md, "Polls"). Bounded: past MAX_KEYS, buckets that are full again are dropped
 * (a full bucket is what a new one is), then the oldest.
 */
import type { RateLimit } from '../config/index.js';
import type { RateDecision } from '../redis/rate-limit.js';

/** Buckets kept at most (a few tens of bytes each). */
const MAX_KEYS = 100_000;

export class LocalRateLimiter {
  /** key -> theoretical arrival time (ms, local clock) */
  private readonly tat = new Map<string, number>();
  private readonly intervalMs: number;
  private readonly toleranceMs: number;
  private sweptAt = 0;

  constructor(
    readonly limit: RateLimit,
    private readonly now: () => number = Date.now,
  ) {
    this.intervalMs = limit.periodMs / limit.rate;
    this.toleranceMs = this.intervalMs * limit.burst;
  }

  /** Takes one request from `key`'s bucket: over any span T at most burst + T x rate pass. */
  take(key: string): RateDecision {
    const now = this.now();
    const had = this.tat.get(key);
    const tat = had === undefined || had < now ? now : had;
    const next = tat + this.intervalMs;
    const allowedAt = next - this.toleranceMs;
    if (allowedAt > now) {
      return {
        allowed: false,
        remaining: 0,
        resetMs: Math.ceil(tat - now),
        retryMs: Math.max(1, Math.ceil(allowedAt - now)),
        taken: 0,
        nextMs: 0,
      };
    }
    if (had === undefined && this.tat.size >= MAX_KEYS) this.makeRoom(now);
    this.tat.delete(key); // re-inserted last: the oldest entries are the least recently used
    this.tat.set(key, next);
    const remaining = Math.floor((now - allowedAt) / this.intervalMs);
    return {
      allowed: true,
      remaining,
      resetMs: Math.ceil(next - now),
      retryMs: 0,
      taken: 1,
      nextMs: remaining > 0 ? 0 : Math.ceil(allowedAt + this.intervalMs - now),
    };
  }

  /** Buckets held (tests). */
  get size(): number {
    return this.tat.size;
  }

  private makeRoom(now: number): void {
    // a sweep at most once a second: a flood of new keys pays the oldest's eviction, not a scan
    if (now - this.sweptAt >= 1_000) {
      this.sweptAt = now;
      for (const [key, tat] of this.tat) if (tat <= now) this.tat.delete(key);
      if (this.tat.size < MAX_KEYS) return;
    }
    const oldest = this.tat.keys().next().value;
    if (oldest !== undefined) this.tat.delete(oldest);
  }
}
