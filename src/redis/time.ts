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

/** `ms-seq` stream ids compared as numbers. */
export function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am - bm : as - bs;
}

/**
 * How far the monotonic clock may drift from the server's, per ms of a sample's age: 1 ms a second
 * (NTP slews clocks by at most 0.5 ms a second; a quartz drifts far less).
 */
const DRIFT = 0.001;

/**
 * The Redis server's clock as seen from this process: one TIME sample carried forward on the
 * monotonic clock (which no wall-clock step moves). The sample is taken again in the background
 * once it is `refreshMs` old, the old one serving meanwhile (and through a store outage) with a
 * doubt that grows with its age. It answers only questions it is sure of, its doubt and
 * `marginMs` counted against it, so a decision near the boundary is left to Redis (a script
 * reading TIME).
 */
export class ServerClock {
  private sample: { serverMs: number; monoMs: number; uncertaintyMs: number } | undefined;
  private syncing: Promise<void> | undefined;
  /** when the last sample failed (monotonic ms), so a caller does not wait on every request */
  private failedAt = -Infinity;

  constructor(
    private readonly redis: RedisClient,
    private readonly marginMs: number,
    private readonly refreshMs = 10_000,
  ) {}

  /** No sample was ever taken, and none failed a moment ago: the first one is worth waiting for. */
  get unsampled(): boolean {
    return this.sample === undefined && performance.now() - this.failedAt > 1_000;
  }

  /** Surely past `ms` by the server's clock (false while unsure or before the first sample). */
  surelyAfter(ms: number): boolean {
    const s = this.current();
    if (!s) return false;
    const age = performance.now() - s.monoMs;
    return s.serverMs + age - (s.uncertaintyMs + age * DRIFT + this.marginMs) >= ms;
  }

  /** Surely before `ms` by the server's clock (false while unsure or before the first sample). */
  surelyBefore(ms: number): boolean {
    const s = this.current();
    if (!s) return false;
    const age = performance.now() - s.monoMs;
    return s.serverMs + age + (s.uncertaintyMs + age * DRIFT + this.marginMs) < ms;
  }

  /** The sample, a new one asked for in the background when it is due (or there is none). */
  private current(): ServerClock['sample'] {
    const s = this.sample;
    const mono = performance.now();
    if ((!s || mono - s.monoMs > this.refreshMs) && mono - this.failedAt > 1_000) {
      void this.sync();
    }
    return s;
  }

  /** Takes a new sample, one at a time (a failed one keeps the old, whose doubt keeps growing). */
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
