/**
 * When a failed delivery is tried again: the schedule's delay for that attempt (Standard
 * Webhooks' by default: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), each spread +-20 % at random
 * so receivers coming back are not hit by every lane at once; a longer `Retry-After` from the
 * receiver wins, up to a day. After the schedule's last delay and its attempt, the event is
 * dead-lettered. A lane held back (its endpoint quiet, not an attempt) waits the same schedule,
 * stepped by how long the endpoint has been quiet.
 */

/** The most a receiver's Retry-After may hold a lane back. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

export const JITTER = 0.2;

/**
 * The delay before attempt `attemptsMade + 1`, or undefined when `attemptsMade` attempts used the
 * schedule up. @param random - [0, 1) (Math.random by default)
 */
export function retryDelay(
  scheduleMs: readonly number[],
  attemptsMade: number,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number | undefined {
  const base = scheduleMs[attemptsMade - 1];
  if (base === undefined) return undefined;
  const jittered = Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/**
 * How long a lane is held back while its endpoint has been quiet `quietForMs`: the schedule's
 * first delay, then each next one once the endpoint has been quiet longer than the delays before
 * it (5 s, then 5 min after 5 s, 30 min after 5 min 5 s, ...), spread by the jitter.
 */
export function holdDelay(
  scheduleMs: readonly number[],
  quietForMs: number,
  random: () => number = Math.random,
): number {
  let step = 0;
  for (let passed = 0; step < scheduleMs.length - 1; step++) {
    if (passed + scheduleMs[step]! > quietForMs) break;
    passed += scheduleMs[step]!;
  }
  return Math.round(scheduleMs[step]! * (1 - JITTER + 2 * JITTER * random()));
}
