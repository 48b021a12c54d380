/**
 * The base of every lock of a client (Redisson's RedissonBaseLock): one named lock, acquired and
 * released for an explicit owner id. It holds the whole acquisition: the in-process latch, the
 * strategy's attempt (default or fair), the wait loop on unlock notices, the acquisition-time
 * check, and the lease guard of each hold. The context API (DistributedLock) and the hot-path
 * handle (LockClient.acquire) only choose the owner id.
 */
import type { RedisClient } from '../redis/connection.js';
import type { LockKeys } from '../redis/keys.js';
import { LockNotHeldError } from './errors.js';
import { LeaseGuard } from './lease.js';
import type { NoticeListener } from './notices.js';
import * as protocol from './protocol.js';
import type { LockRuntime } from './runtime.js';
import type { AcquireStrategy } from './strategies.js';

export type { LockMetrics, LockRuntime } from './runtime.js';
export { defaultAcquire, fairAcquire, type AcquireStrategy } from './strategies.js';

export interface AcquireOptions {
  /**
   * How long to wait for the lock in Redis, in ms, counted from when this process's latch lets
   * the caller try (a burst queued in the latch does not eat its waiters' budgets). Default 0
   * (one attempt); Infinity waits for ever.
   */
  waitMs?: number;
  /** How long to wait in this process's latch before that (default: `waitMs`). */
  queueMs?: number;
  /**
   * Asked when the latch lets the caller through; false gives up without a Redis command (the
   * work the lock was for is no longer wanted, say the stock ran out meanwhile).
   */
  stillWanted?: () => boolean;
  /** Lease in ms. Omit it for a lease of `watchdogTimeoutMs` that a watchdog keeps renewing. */
  leaseMs?: number;
  /** Aborts the wait (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /**
   * Told, when a single attempt (`waitMs` 0) finds the lock held, how long the holder's lease has
   * left (ms; -1: no lease): when to look again to take over a holder that died.
   */
  onBusy?: (waitMs: number) => void;
}

/** The longest a waiter sleeps when the holder has no lease (PTTL -1) before it looks again. */
const NO_LEASE_RECHECK_MS = 1_000;
/** setTimeout's ceiling. */
const MAX_TIMER_MS = 2_147_483_647;

type Attempt = protocol.AcquireReply & { startedAt: number; latencyMs: number };

export class BaseLock {
  constructor(
    protected readonly rt: LockRuntime,
    readonly name: string,
    readonly keys: LockKeys,
    protected readonly strategy: AcquireStrategy,
  ) {}

  get fair(): boolean {
    return this.strategy.fair;
  }

  protected guardOf(owner: string): LeaseGuard | undefined {
    return this.rt.guards.get(`${this.keys.lock} ${owner}`);
  }

  /**
   * Takes (or re-enters) the lock for `owner`, waiting up to `waitMs`: first this process's latch
   * for the lock (unless `owner` holds it already), then Redis.
   * @param fresh - `owner` was never used before (an acquire() handle, a withLock context that
   *   inherited no hold of this lock): it cannot hold the lock, so neither this process nor Redis
   *   looks for a hold to re-enter.
   * @param waitMs - `opts.waitMs` with its default (a caller with another default passes it here
   *   rather than copying `opts`).
   * @returns the hold, or null when the wait ran out.
   * @throws the signal's reason when `opts.signal` aborts the wait.
   */
  async acquireAs(
    owner: string,
    opts: AcquireOptions,
    fresh = false,
    waitMs = opts.waitMs ?? 0,
  ): Promise<LeaseGuard | null> {
    const t0 = Date.now();
    let leave: (() => void) | undefined;
    if (this.rt.settings.localQueue && (fresh || !this.guardOf(owner))) {
      const entered = this.rt.latch.enter(this.name, opts.queueMs ?? waitMs);
      const got = entered instanceof Promise ? await entered : entered;
      if (!got) return null;
      leave = got;
    }
    if (opts.stillWanted && !opts.stillWanted()) {
      leave?.();
      return null;
    }
    // the wait in Redis counts from here: when this process first lets the caller try
    const deadline = Date.now() + waitMs;
    try {
      const guard = await this.acquireInRedis(owner, opts, deadline, t0, leave, !fresh);
      if (!guard) leave?.();
      return guard;
    } catch (err) {
      leave?.();
      throw err;
    }
  }

  private async acquireInRedis(
    owner: string,
    opts: AcquireOptions,
    deadline: number,
    t0: number,
    leave: (() => void) | undefined,
    mayReenter: boolean,
  ): Promise<LeaseGuard | null> {
    const { settings, notices, metrics } = this.rt;
    const leaseMs = opts.leaseMs ?? settings.watchdogTimeoutMs;
    const grant = (attempt: Exclude<Attempt, { code: 'busy' }>) =>
      this.granted(owner, attempt, leaseMs, opts.leaseMs === undefined, t0, leave);
    const willWait = deadline > Date.now();
    const pubsub = settings.wakeup === 'pubsub';
    // A channel already subscribed catches a notice sent right after the first attempt.
    let listener: NoticeListener | undefined =
      willWait && pubsub ? notices.listening(this.keys.channel) : undefined;
    let inLine = false;
    try {
      let r = await this.attempt(owner, leaseMs, willWait, false, mayReenter);
      if (r.code !== 'busy') return grant(r);
      metrics.contended();
      if (!willWait) {
        opts.onBusy?.(r.waitMs);
        return null;
      }
      inLine = true;
      let check = false;
      if (pubsub && !listener) {
        listener = await notices.listen(this.keys.channel);
        check = true; // a release between the first attempt and the subscription went unheard
      }
      for (;;) {
        if (check) {
          r = await this.attempt(owner, leaseMs, true, true, mayReenter);
          if (r.code !== 'busy') {
            inLine = false;
            return grant(r);
          }
        }
        check = true;
        const remaining = deadline - Date.now();
        if (remaining <= 0) return null;
        let sleep = r.waitMs >= 0 ? r.waitMs : NO_LEASE_RECHECK_MS;
        // Look again now and then: a notice lost on a subscriber reconnect must not strand us.
        sleep = Math.min(sleep, settings.placeMs / 3, remaining, MAX_TIMER_MS);
        if (!pubsub) sleep = Math.min(sleep, settings.pollIntervalMs);
        if (listener) await listener.wait(owner, sleep, opts.signal);
        else await sleepFor(sleep, opts.signal);
      }
    } finally {
      listener?.release(owner);
      if (inLine) await this.leaveLine(owner);
    }
  }

  /** Gives up a place in line (or a reservation); wakes the next waiter if need be. */
  private async leaveLine(owner: string): Promise<void> {
    const { redis, processId, settings, notices } = this.rt;
    try {
      const r = await protocol.leaveLine(redis, this.keys, owner, processId, settings.handoffMs);
      if (r.woken) notices.wakeLocal(this.keys.channel, r.woken);
    } catch {
      // Unreachable Redis: our place (and any reservation for us) lapses by itself.
    }
  }

  /**
   * One acquisition call. An acquisition that took as long as its lease may already have expired:
   * it is released at once and reported as busy.
   */
  private async attempt(
    owner: string,
    leaseMs: number,
    wait: boolean,
    inLine: boolean,
    mayReenter: boolean,
  ): Promise<Attempt> {
    const startedAt = Date.now();
    const handoffMs = this.rt.settings.handoffMs;
    const r = await this.strategy.attempt(this.rt.redis, this.keys, {
      owner,
      leaseMs,
      wait,
      inLine,
      handoffMs,
      mayReenter,
    });
    const latencyMs = Date.now() - startedAt;
    if (r.code !== 'busy' && latencyMs >= leaseMs) {
      await this.releaseInRedis(owner).catch(() => {});
      return { code: 'busy', waitMs: 0, startedAt, latencyMs };
    }
    return Object.assign(r, { startedAt, latencyMs });
  }

  private granted(
    owner: string,
    attempt: Exclude<Attempt, { code: 'busy' }>,
    leaseMs: number,
    watchdog: boolean,
    t0: number,
    leave: (() => void) | undefined,
  ): LeaseGuard {
    const key = `${this.keys.lock} ${owner}`;
    let guard = this.rt.guards.get(key);
    if (attempt.code === 'acquired' || !guard) {
      leave ??= guard?.takeOnEnd();
      guard?.lose('re-acquired after the lock was lost');
      guard = new LeaseGuard({
        name: this.name,
        keys: this.keys,
        owner,
        fence: attempt.fence,
        leaseMs,
        watchdog,
        acquiredAt: attempt.startedAt,
        redis: this.rt.redis,
        events: this.rt.leaseEvents,
        ...(leave && { onEnd: leave }),
      });
      this.rt.guards.set(key, guard);
    } else {
      leave?.(); // re-entered: the latch stays with the first acquisition
    }
    guard.count = attempt.count;
    this.rt.metrics.acquired({
      latencyMs: attempt.latencyMs,
      waitedMs: Date.now() - t0,
      reentrant: attempt.code === 'reentered',
      fair: this.fair,
    });
    return guard;
  }

  /** Runs the release script; wakes the named waiter directly when it is one of ours. */
  private async releaseInRedis(owner: string): Promise<protocol.ReleaseReply> {
    const { redis, processId, settings, notices } = this.rt;
    const r = await protocol.release(redis, this.keys, owner, processId, settings.handoffMs);
    if (r.code === 'released' && r.woken) notices.wakeLocal(this.keys.channel, r.woken);
    return r;
  }

  /**
   * Releases one hold of `owner`; the last one deletes the lock and wakes (and keeps the lock
   * for) the next waiter.
   * @throws LockNotHeldError when the lease ran out or another owner took the lock.
   */
  async releaseAs(owner: string): Promise<'released' | 'still-held'> {
    const outcome = await this.settleRelease(owner, () => this.releaseInRedis(owner));
    if (outcome === 'not-held') {
      throw new LockNotHeldError(this.name, 'its lease expired or another owner took it');
    }
    return outcome;
  }

  /**
   * Sends the command `before` issues, then the release of `owner`'s hold, back to back on the
   * command connection: one write (the connection coalesces a tick's commands), one round trip.
   * The command runs while the lock is still held, and the release costs no extra wait. A lease
   * that ran out meanwhile is reported ('not-held'), not thrown: the command's result (a fenced
   * write, say) still stands.
   * @param before - must send its command synchronously (a script call does).
   * @throws the command's error, or the release's when the round trip failed.
   */
  async releaseAfter<T>(
    owner: string,
    before: () => Promise<T>,
  ): Promise<{ result: T; released: protocol.ReleaseReply['code'] }> {
    const sent = before();
    sent.catch(() => {}); // awaited below; an early rejection must not go unhandled
    const released = await this.settleRelease(owner, () => this.releaseInRedis(owner));
    return { result: await sent, released };
  }

  /** Ends (or keeps) the local hold after a release call, whatever it answered. */
  private async settleRelease(
    owner: string,
    call: () => Promise<protocol.ReleaseReply>,
  ): Promise<protocol.ReleaseReply['code']> {
    const key = `${this.keys.lock} ${owner}`;
    const guard = this.rt.guards.get(key);
    let r: protocol.ReleaseReply;
    try {
      r = await call();
    } catch (err) {
      // Unknown outcome: the lease ends it in Redis; here the hold is over either way.
      this.rt.guards.delete(key);
      await guard?.stop();
      throw err;
    }
    if (r.code === 'still-held') {
      if (guard) guard.count = r.count;
      return r.code;
    }
    this.rt.guards.delete(key);
    await guard?.stop();
    if (r.code === 'not-held') guard?.lose('its lease expired or another owner took it');
    return r.code;
  }

  isLocked(): Promise<boolean> {
    return protocol.isLocked(this.rt.redis, this.keys);
  }

  /** Remaining lease in ms; null when not locked, Infinity when locked without a lease. */
  remainingTtl(): Promise<number | null> {
    return protocol.remainingLease(this.rt.redis, this.keys);
  }

  /** Admin: deletes the lock whoever holds it (their signal aborts at their next renewal). */
  async forceUnlock(): Promise<boolean> {
    const { redis, processId, settings, notices, guards } = this.rt;
    const r = await protocol.forceUnlock(redis, this.keys, processId, settings.handoffMs);
    if (r.woken) notices.wakeLocal(this.keys.channel, r.woken);
    for (const [key, guard] of guards) {
      if (key.startsWith(`${this.keys.lock} `)) {
        guards.delete(key);
        await guard.stop();
        guard.lose('force-unlocked by an admin');
      }
    }
    return r.deleted;
  }
}

export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
