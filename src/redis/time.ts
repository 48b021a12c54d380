/**
 * Redis server time. Every clock decision (sale window, outbox age, reconciliation cut) uses the
 * server's clock, so API processes with skewed clocks still agree.
 */
import type { RedisClient } from './connection.js';

/** Milliseconds from a TIME reply (`[seconds, microseconds]`; strings on the wire, typed loosely by ioredis). */
export function timeReplyMs([secs, micros]: readonly (string | number)[]): number {
  return Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
}

/** The Redis server's clock, ms since the epoch. */
export async function serverNowMs(redis: RedisClient): Promise<number> {
  return timeReplyMs(await redis.time());
}

/** Milliseconds of a stream entry id (`"<server ms>-<seq>"`): when XADD ran, by the server's clock. */
export function streamIdMs(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

/**
 * The Redis server's clock as seen from this process: one TIME sample carried forward on the
 * monotonic clock (which no wall-clock step moves), taken again when it is older than `maxAgeMs`.
 * It answers only questions it is sure of, its sample's round trip and `marginMs` counted against
 * it, so a decision near the boundary is left to Redis (a script reading TIME).
 */
export class ServerClock {
  private sample: { serverMs: number; monoMs: number; uncertaintyMs: number } | undefined;
  private syncing: Promise<void> | undefined;
  /** when the last sample failed (monotonic ms), so a caller does not wait on every request */
  private failedAt = -Infinity;

  constructor(
    private readonly redis: RedisClient,
    private readonly marginMs: number,
    private readonly maxAgeMs = 30_000,
  ) {}

  /** No sample was ever taken, and none failed a moment ago: the first one is worth waiting for. */
  get unsampled(): boolean {
    return this.sample === undefined && performance.now() - this.failedAt > 1_000;
  }

  /** Surely past `ms` by the server's clock (false while unsure or without a fresh sample). */
  surelyAfter(ms: number): boolean {
    const now = this.now();
    return now !== undefined && now - this.sample!.uncertaintyMs - this.marginMs >= ms;
  }

  /** Surely before `ms` by the server's clock (false while unsure or without a fresh sample). */
  surelyBefore(ms: number): boolean {
    const now = this.now();
    return now !== undefined && now + this.sample!.uncertaintyMs + this.marginMs < ms;
  }

  /** The estimate, or undefined (a new sample is asked for) when there is no fresh one. */
  private now(): number | undefined {
    const s = this.sample;
    const mono = performance.now();
    if (!s || mono - s.monoMs > this.maxAgeMs) {
      if (mono - this.failedAt > 1_000) void this.sync();
      return undefined;
    }
    return s.serverMs + (mono - s.monoMs);
  }

  /** Takes a new sample, one at a time (a failed one keeps the old, which ages out). */
  sync(): Promise<void> {
    this.syncing ??= (async () => {
      const sent = performance.now();
      try {
        const reply = await this.redis.time();
        const got = performance.now();
        this.sample = {
          serverMs: timeReplyMs(reply),
          monoMs: (sent + got) / 2,
          uncertaintyMs: (got - sent) / 2,
        };
      } catch {
        this.failedAt = performance.now();
      } finally {
        this.syncing = undefined;
      }
    })();
    return this.syncing;
  }
}
