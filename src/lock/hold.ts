/**
 * One hold of a lock by one owner (shared by its reentrant acquisitions): the fencing token, the
 * watchdog that renews a lease taken without `leaseMs`, and the AbortSignal that tells the holder
 * when the lock is lost.
 */
import type { Redis } from 'ioredis';
import { messageOf } from '../errors.js';
import type { LockKeys } from '../redis/keys.js';
import { LockLostError } from './errors.js';
import * as protocol from './protocol.js';

export interface HoldEvents {
  renewed(ok: boolean): void;
  lost(): void;
}

export class Hold {
  count = 1;
  lost = false;
  private controller: AbortController | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private stopped = false;
  /** Local time at which the lease was last known to be good (start of the confirming call). */
  private confirmedAt: number;

  constructor(
    readonly name: string,
    private readonly keys: LockKeys,
    readonly owner: string,
    readonly fence: number,
    /** Lease of the first acquisition (the watchdog timeout when `watchdog`). */
    readonly leaseMs: number,
    readonly watchdog: boolean,
    /** Local time when the acquiring call was sent: the lease runs from there at the latest. */
    acquiredAt: number,
    private readonly redis: Redis,
    private readonly events: HoldEvents,
  ) {
    this.confirmedAt = acquiredAt;
    if (watchdog) this.scheduleRenewal();
  }

  /** Aborts with {@link LockLostError} when the lock is lost (created on first use). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lost)
        this.controller.abort(new LockLostError(this.name, 'lost before the signal was read'));
      else if (!this.watchdog) this.armExpiry();
    }
    return this.controller.signal;
  }

  /** A fixed lease ends the hold when it runs out; the holder learns it through the signal. */
  private armExpiry(): void {
    const left = this.confirmedAt + this.leaseMs - Date.now();
    if (left <= 0) {
      this.lose(`its lease of ${this.leaseMs} ms expired`);
      return;
    }
    this.expiryTimer = setTimeout(() => this.lose(`its lease of ${this.leaseMs} ms expired`), left);
    this.expiryTimer.unref();
  }

  private scheduleRenewal(): void {
    // Every third of the lease: a late renewal still lands before expiry (seed 003's ttl/3).
    this.renewTimer = setTimeout(() => {
      this.renewing = this.renewOnce().finally(() => (this.renewing = undefined));
    }, this.leaseMs / 3);
    this.renewTimer.unref();
  }

  private async renewOnce(): Promise<void> {
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      const ok = await Promise.race([
        protocol.renew(this.redis, this.keys, this.owner, this.leaseMs),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('renewal got no answer')), this.leaseMs / 3);
        }),
      ]);
      if (this.stopped) return;
      this.events.renewed(ok);
      if (!ok) {
        this.lose('renewal found it gone or held by another owner');
        return;
      }
      this.confirmedAt = started;
    } catch (err) {
      if (this.stopped) return;
      this.events.renewed(false);
      if (Date.now() - this.confirmedAt >= this.leaseMs) {
        this.lose(
          `Redis did not confirm a renewal for a whole lease (${this.leaseMs} ms): ${messageOf(err)}`,
          err,
        );
        return;
      }
    } finally {
      clearTimeout(timer);
    }
    if (!this.stopped && !this.lost) this.scheduleRenewal();
  }

  /** Marks the hold lost and aborts the holder's signal. */
  lose(why: string, cause?: unknown): void {
    if (this.lost) return;
    this.lost = true;
    this.clearTimers();
    this.events.lost();
    this.controller?.abort(new LockLostError(this.name, why, { cause }));
  }

  private clearTimers(): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
  }

  /** Stops renewing (before release): clears the timer; returns a renewal still in flight. */
  stop(): Promise<void> | undefined {
    this.stopped = true;
    this.clearTimers();
    return this.renewing;
  }
}
