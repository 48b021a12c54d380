/**
 * What this process knows of one owner's hold of a lock (shared by its reentrant acquisitions):
 * the fencing token, the hold count, the watchdog that renews a lease taken without `leaseMs`,
 * the AbortSignal that tells the holder when the lock is lost, and the hook that opens the
 * in-process latch when the hold ends however it ends (released, lost, or its lease ran out).
 */
import type { RedisClient } from '../redis/connection.js';
import { messageOf } from '../errors.js';
import type { LockKeys } from '../redis/keys.js';
import { LockLostError } from './errors.js';
import * as protocol from './protocol.js';

export interface LeaseEvents {
  renewed(ok: boolean): void;
  lost(): void;
}

export interface LeaseGuardOptions {
  name: string;
  keys: LockKeys;
  owner: string;
  fence: number;
  /** Lease of the first acquisition (the watchdog timeout when `watchdog`). */
  leaseMs: number;
  watchdog: boolean;
  /** Local time when the acquiring call was sent: the lease runs from there at the latest. */
  acquiredAt: number;
  redis: RedisClient;
  events: LeaseEvents;
  /**
   * Runs once when the hold ends (the in-process latch of this lock opens): released, lost, or
   * its fixed lease ran out (a holder that never releases must not keep the process's other
   * contenders in the latch).
   */
  onEnd?: () => void;
}

export class LeaseGuard {
  count = 1;
  lost = false;
  readonly name: string;
  readonly owner: string;
  readonly fence: number;
  private readonly opts: LeaseGuardOptions;
  private controller: AbortController | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private stopped = false;
  private onEnd: (() => void) | undefined;
  /** Local time at which the lease was last known to be good (start of the confirming call). */
  private confirmedAt: number;

  constructor(opts: LeaseGuardOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.owner = opts.owner;
    this.fence = opts.fence;
    this.onEnd = opts.onEnd;
    this.confirmedAt = opts.acquiredAt;
    if (opts.watchdog) this.scheduleRenewal();
    else if (opts.onEnd) this.armExpiry();
  }

  get leaseMs(): number {
    return this.opts.leaseMs;
  }

  /** Aborts with {@link LockLostError} when the lock is lost (created on first use). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lost)
        this.controller.abort(new LockLostError(this.name, 'lost before the signal was read'));
      else if (!this.opts.watchdog && !this.expiryTimer) this.armExpiry();
    }
    return this.controller.signal;
  }

  /** A fixed lease ends the hold when it runs out; the holder learns it through the signal. */
  private armExpiry(): void {
    const left = this.confirmedAt + this.opts.leaseMs - Date.now();
    const why = `its lease of ${this.opts.leaseMs} ms expired`;
    if (left <= 0) {
      this.lose(why);
      return;
    }
    this.expiryTimer = setTimeout(() => this.lose(why), left);
    this.expiryTimer.unref();
  }

  private scheduleRenewal(): void {
    // Every third of the lease: a late renewal still lands before expiry.
    this.renewTimer = setTimeout(() => {
      this.renewing = this.renewOnce().finally(() => (this.renewing = undefined));
    }, this.opts.leaseMs / 3);
    this.renewTimer.unref();
  }

  private async renewOnce(): Promise<void> {
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const ok = await Promise.race([
        protocol.renew(this.opts.redis, this.opts.keys, this.owner, this.opts.leaseMs),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error('renewal got no answer')),
            this.opts.leaseMs / 3,
          );
        }),
      ]);
      if (this.stopped) return;
      this.opts.events.renewed(ok);
      if (!ok) {
        this.lose('renewal found it gone or held by another owner');
        return;
      }
      this.confirmedAt = started;
    } catch (err) {
      if (this.stopped) return;
      this.opts.events.renewed(false);
      if (Date.now() - this.confirmedAt >= this.opts.leaseMs) {
        this.lose(
          `Redis did not confirm a renewal for a whole lease (${this.opts.leaseMs} ms): ${messageOf(err)}`,
          err,
        );
        return;
      }
    } finally {
      clearTimeout(timer);
    }
    if (!this.stopped && !this.lost) this.scheduleRenewal();
  }

  /** Marks the hold lost, aborts the holder's signal and opens the latch. */
  lose(why: string, cause?: unknown): void {
    if (this.lost) return;
    this.lost = true;
    this.clearTimers();
    this.opts.events.lost();
    this.controller?.abort(new LockLostError(this.name, why, { cause }));
    this.end();
  }

  private clearTimers(): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
  }

  /** Takes the end hook away (a new hold of the same owner inherits the latch). */
  takeOnEnd(): (() => void) | undefined {
    const onEnd = this.onEnd;
    this.onEnd = undefined;
    return onEnd;
  }

  private end(): void {
    const onEnd = this.onEnd;
    this.onEnd = undefined;
    onEnd?.();
  }

  /**
   * The hold is over (released): stops renewing, opens the latch; returns a renewal still in
   * flight.
   */
  stop(): Promise<void> | undefined {
    this.stopped = true;
    this.clearTimers();
    this.end();
    return this.renewing;
  }
}
