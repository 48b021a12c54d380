/**
 * Lock options, resolved once per client (node-redlock's frozen `defaultSettings`): every default
 * lives here, and a client's settings object is frozen, so no code path re-derives a default.
 */

export interface LockSettings {
  /** Lease of a lock taken without `leaseMs`, renewed every third of it. */
  readonly watchdogTimeoutMs: number;
  /**
   * A waiter looks again at least three times per this period even without an unlock notice (a
   * notice lost on a subscriber reconnect must not strand it).
   */
  readonly placeMs: number;
  /**
   * How long a released lock is kept for the waiter the release woke before anyone else may take
   * it (no barging past a woken waiter, so nobody starves). A waiter that never comes (its
   * process died) holds the lock up this long, once, and then has lost its place.
   */
  readonly handoffMs: number;
  /**
   * How waiters learn the lock is free: `pubsub` sleeps until an unlock notice or the holder's
   * remaining lease; `poll` retries every `pollIntervalMs` (the benchmark baseline).
   */
  readonly wakeup: 'pubsub' | 'poll';
  readonly pollIntervalMs: number;
  /**
   * Contenders of one process for the same lock queue in memory first (an in-process FIFO
   * latch): only one of them at a time talks to Redis, a local timeout costs no command.
   */
  readonly localQueue: boolean;
}

export const DEFAULT_LOCK_SETTINGS: LockSettings = Object.freeze({
  watchdogTimeoutMs: 30_000,
  placeMs: 5_000,
  handoffMs: 200,
  wakeup: 'pubsub',
  pollIntervalMs: 10,
  localQueue: true,
});

/** Defaults plus the given options (undefined ones ignored), frozen. */
export function resolveLockSettings(given: Partial<LockSettings> = {}): LockSettings {
  const set = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  return Object.freeze({ ...DEFAULT_LOCK_SETTINGS, ...set });
}
