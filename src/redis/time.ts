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
