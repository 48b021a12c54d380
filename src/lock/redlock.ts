/**
 * RedLock over N independent Redis servers (not replicas of one another): the lock is held when a
 * majority granted it and time is left on the lease after subtracting the time the round took
 * and the clock drift allowance. A failed round releases everywhere. Read "RedLock, and when not
 * to rely on it" (docs/design/lock.md) before using it: it assumes bounded clock drift, network
 * delay and process pauses; fencing tokens checked by the resource are the remedy when those
 * assumptions break.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keys } from '../redis/keys.js';
import { LockLostError, LockTimeoutError } from './errors.js';
import * as protocol from './protocol.js';

export interface RedLockOptions {
  /** Independent servers; N >= 3 and odd is the usual choice. */
  servers: Redis[];
  keys: Keys;
  /** Per-server time budget of one acquisition call. Default: lease / 10, at least 5 ms. */
  serverTimeoutMs?: number;
  /** Pause between rounds: random in [delay/2, delay]. Default 50 ms. */
  retryDelayMs?: number;
  /** Clock drift allowance per ms of lease. Default 0.01. */
  driftFactor?: number;
}

export interface RedLockLease {
  name: string;
  owner: string;
  /** ms the lock is known valid for, counted from when the round started. */
  validityMs: number;
  /** Local time after which the lock must be assumed lost. */
  expiresAt: number;
  /**
   * Per-server fencing tokens (undefined where not granted). They are not one total order:
   * a resource guarded by RedLock should still check a token of its own (see docs/design/lock.md).
   */
  fences: Array<number | undefined>;
  /** Servers that granted the lock. */
  granted: number;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export class RedLock {
  readonly quorum: number;

  constructor(private readonly opts: RedLockOptions) {
    if (opts.servers.length === 0) throw new Error('RedLock needs at least one server');
    this.quorum = Math.floor(opts.servers.length / 2) + 1;
  }

  /** Drift allowance for a lease: 1% of it plus 2 ms (Redis' reference implementation). */
  drift(leaseMs: number): number {
    return Math.round((this.opts.driftFactor ?? 0.01) * leaseMs) + 2;
  }

  /**
   * Tries to take `name` on a majority, round after round, until `waitMs` runs out.
   * @returns the lease, or null (nothing is left behind on any server).
   */
  async acquire(
    name: string,
    opts: { leaseMs: number; waitMs?: number },
  ): Promise<RedLockLease | null> {
    const deadline = Date.now() + (opts.waitMs ?? 0);
    const keys = this.opts.keys.lock(name);
    for (;;) {
      const owner = `redlock:${randomUUID()}`;
      const started = Date.now();
      const budget = this.opts.serverTimeoutMs ?? Math.max(5, Math.floor(opts.leaseMs / 10));
      const replies = await Promise.allSettled(
        this.opts.servers.map((server) =>
          withTimeout(protocol.acquire(server, keys, owner, opts.leaseMs), budget),
        ),
      );
      const fences = replies.map((r) =>
        r.status === 'fulfilled' && r.value.code === 'acquired' ? r.value.fence : undefined,
      );
      const granted = fences.filter((f) => f !== undefined).length;
      const validityMs = opts.leaseMs - (Date.now() - started) - this.drift(opts.leaseMs);
      if (granted >= this.quorum && validityMs > 0) {
        return { name, owner, validityMs, expiresAt: started + validityMs, fences, granted };
      }
      // Release everywhere, including where the call timed out but may still have succeeded.
      await this.releaseOwner(name, owner, budget);
      const delay = this.opts.retryDelayMs ?? 50;
      const pause = delay / 2 + Math.random() * (delay / 2);
      if (Date.now() + pause > deadline) return null;
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /**
   * Runs `fn` holding `name` on a majority, then releases it everywhere: the shape of
   * `LockClient.withLock`. `fn` gets an AbortSignal that aborts with LockLostError when the
   * lease's validity runs out (RedLock has no watchdog: pick a lease longer than `fn` takes).
   * @param opts.waitMs - default Infinity (retry rounds until it is held); LockTimeoutError when
   *   it runs out.
   */
  async using<T>(
    name: string,
    fn: (signal: AbortSignal, lease: RedLockLease) => Promise<T> | T,
    opts: { leaseMs: number; waitMs?: number },
  ): Promise<T> {
    const waitMs = opts.waitMs ?? Infinity;
    const lease = await this.acquire(name, { leaseMs: opts.leaseMs, waitMs });
    if (!lease) throw new LockTimeoutError(name, waitMs);
    const expiry = new AbortController();
    const timer = setTimeout(
      () => expiry.abort(new LockLostError(name, `its validity of ${lease.validityMs} ms ran out`)),
      Math.max(0, lease.expiresAt - Date.now()),
    );
    try {
      return await fn(expiry.signal, lease);
    } finally {
      clearTimeout(timer);
      await this.release(lease);
    }
  }

  /**
   * Releases the lease on every server (owner-checked: never another holder's lock). A server
   * that does not answer within `timeoutMs` (default 1 s) keeps the lock until its lease ends.
   */
  async release(lease: RedLockLease, timeoutMs = 1_000): Promise<void> {
    await this.releaseOwner(lease.name, lease.owner, timeoutMs);
  }

  private async releaseOwner(name: string, owner: string, timeoutMs: number): Promise<void> {
    const keys = this.opts.keys.lock(name);
    await Promise.allSettled(
      this.opts.servers.map((server) =>
        withTimeout(protocol.release(server, keys, owner, 'redlock'), timeoutMs),
      ),
    );
  }
}
