/**
 * A Redisson-grade distributed lock for Node: reentrant per async context, lease + watchdog,
 * waiting on unlock notices (sharded pub/sub) instead of spinning, a fair mode, fencing tokens,
 * and the acquisition-time check (an acquisition slower than its lease counts as failed).
 *
 * ```ts
 * const locks = new LockClient({ redis, pubsub, keys });
 * await locks.withLock('report', async (signal, lease) => {
 *   await work({ signal, fence: lease.fence });
 * });
 * ```
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keys, LockKeys } from '../redis/keys.js';
import type { PubSub } from '../redis/pubsub.js';
import { currentContext, runInNewContext, type LockContext } from './context.js';
import { LockContextError, LockNotHeldError, LockTimeoutError } from './errors.js';
import { Hold } from './hold.js';
import { UnlockNotices } from './notices.js';
import * as protocol from './protocol.js';

export interface LockMetrics {
  /** A successful acquisition: the winning call's latency and the whole wait. */
  acquired(e: { latencyMs: number; waitedMs: number; reentrant: boolean; fair: boolean }): void;
  /** A first attempt found the lock held by someone else. */
  contended(): void;
  renewed(ok: boolean): void;
  lost(): void;
}

export interface LockClientOptions {
  /** Command connection (scripts are registered on it). */
  redis: Redis;
  /** The process's shared subscriber. */
  pubsub: PubSub;
  keys: Keys;
  /** Lease of a lock taken without `leaseMs`, renewed every third of it. Default 30 000 ms. */
  watchdogTimeoutMs?: number;
  /**
   * How long a waiter keeps its place in the lock's line without another attempt (waiters retry
   * three times per period). A crashed waiter stops retrying, so it holds up the line (fair mode)
   * or a hand-off (default mode) for at most this long. Default 5 000 ms.
   */
  placeMs?: number;
  /**
   * How waiters learn the lock is free: `pubsub` (default) sleeps until an unlock notice or the
   * holder's remaining lease; `poll` retries every `pollIntervalMs` (the benchmark baseline).
   */
  wakeup?: 'pubsub' | 'poll';
  /** Retry interval of `poll` wake-up. Default 10 ms. */
  pollIntervalMs?: number;
  metrics?: LockMetrics;
}

export interface TryLockOptions {
  /** How long to wait for the lock, in ms. Default 0 (one attempt); Infinity waits for ever. */
  waitMs?: number;
  /** Lease in ms. Omit it for a lease of `watchdogTimeoutMs` that a watchdog keeps renewing. */
  leaseMs?: number;
  /** Aborts the wait (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

export interface Lease {
  readonly name: string;
  readonly owner: string;
  /** Fencing token: strictly increasing per lock across holders; pass it to the resource. */
  readonly fence: number;
  readonly holdCount: number;
  /** Aborts with LockLostError when the lock is lost while held (watchdog or lease). */
  readonly signal: AbortSignal;
}

/** A lock taken with {@link LockClient.acquire}: release it exactly once. */
export interface HeldLock extends Lease {
  /** @throws LockNotHeldError when the lease ran out or another owner took the lock. */
  release(): Promise<void>;
}

/** The longest a waiter sleeps when the holder has no lease (PTTL -1) before it looks again. */
const NO_LEASE_RECHECK_MS = 1_000;
/** Lock names whose key strings are kept (segment locks are reused all the time). */
const KEY_CACHE_SIZE = 10_000;
/** setTimeout's ceiling. */
const MAX_TIMER_MS = 2_147_483_647;

const noMetrics: LockMetrics = { acquired() {}, contended() {}, renewed() {}, lost() {} };

export class LockClient {
  /** Per-process part of every owner id. */
  readonly processId = randomUUID();
  readonly watchdogTimeoutMs: number;
  private readonly placeMs: number;
  private readonly notices: UnlockNotices;
  private readonly holds = new Map<string, Hold>();
  private readonly holdEvents: { renewed(ok: boolean): void; lost(): void };
  private handles = 0;
  private readonly keyCache = new Map<string, LockKeys>();
  readonly metrics: LockMetrics;

  constructor(private readonly o: LockClientOptions) {
    this.watchdogTimeoutMs = o.watchdogTimeoutMs ?? 30_000;
    this.placeMs = o.placeMs ?? 5_000;
    this.metrics = o.metrics ?? noMetrics;
    this.notices = new UnlockNotices(o.pubsub, this.processId);
    this.holdEvents = {
      renewed: (ok) => this.metrics.renewed(ok),
      lost: () => this.metrics.lost(),
    };
  }

  get redis(): Redis {
    return this.o.redis;
  }

  /** A handle on the lock `name` (cheap; create as many as you like). */
  lock(name: string, opts: { fair?: boolean } = {}): DistributedLock {
    return new DistributedLock(this, name, this.keysOf(name), opts.fair ?? false);
  }

  /** Key names of a lock, built once per name (bounded: cleared past KEY_CACHE_SIZE names). */
  private keysOf(name: string): LockKeys {
    let k = this.keyCache.get(name);
    if (!k) {
      if (this.keyCache.size >= KEY_CACHE_SIZE) this.keyCache.clear();
      k = this.o.keys.lock(name);
      this.keyCache.set(name, k);
    }
    return k;
  }

  /**
   * Takes the lock `name` with an owner id of its own: no lock context, no reentrancy. This is
   * the form for hot paths. (On Node 20 the context API's AsyncLocalStorage adds promise hooks
   * to the whole process, which costs about a quarter of a busy process's throughput.)
   * @returns a handle to release, or null when the wait ran out.
   * @throws the signal's reason when `opts.signal` aborts the wait.
   */
  async acquire(
    name: string,
    opts: TryLockOptions & { fair?: boolean } = {},
  ): Promise<HeldLock | null> {
    const lock = this.lock(name, { fair: opts.fair ?? false });
    const owner = `${this.processId}:h${++this.handles}`;
    const lease = await this.acquireFor(lock, owner, opts);
    if (!lease) return null;
    return new Held(lease, () => this.release(lock, owner));
  }

  /** Runs `fn` in a clean lock context (a new owner), so lock()/unlock() inside it work. */
  runInContext<T>(fn: () => T): T {
    return runInNewContext(fn);
  }

  /**
   * Runs `fn` holding the lock `name`, in its own context (a nested withLock on the same lock is
   * reentrant). `fn` gets an AbortSignal that aborts with LockLostError if the lock is lost.
   * @param opts.waitMs - default Infinity (wait for ever); when it runs out: LockTimeoutError.
   * @param opts.leaseMs - default: watchdog-renewed lease.
   * @throws LockTimeoutError, the signal's reason, or LockNotHeldError when the lock was lost
   *   before `fn` finished (its work may not have been exclusive).
   */
  withLock<T>(
    name: string,
    fn: (signal: AbortSignal, lease: Lease) => Promise<T> | T,
    opts: TryLockOptions & { fair?: boolean } = {},
  ): Promise<T> {
    return runInNewContext(async () => {
      const lock = this.lock(name, { fair: opts.fair ?? false });
      const waitMs = opts.waitMs ?? Infinity;
      const lease = await lock.tryLock({ ...opts, waitMs });
      if (!lease) throw new LockTimeoutError(name, waitMs);
      let result: T;
      try {
        result = await fn(lease.signal, lease);
      } catch (err) {
        await lock.unlock().catch(() => {});
        throw err;
      }
      await lock.unlock();
      return result;
    }, true);
  }

  /** Stops every watchdog of this process (does not release; leases then run out). */
  async close(): Promise<void> {
    await Promise.all([...this.holds.values()].map((h) => h.stop()));
    this.holds.clear();
  }

  /** Number of holds this process currently renews or tracks (tests, metrics). */
  get activeHolds(): number {
    return this.holds.size;
  }

  // ---- internals used by DistributedLock ----

  /** @internal */
  holdOf(keys: LockKeys, owner: string): Hold | undefined {
    return this.holds.get(`${keys.lock} ${owner}`);
  }

  /** @internal */
  async acquireFor(lock: DistributedLock, owner: string, o: TryLockOptions): Promise<Lease | null> {
    const waitMs = o.waitMs ?? 0;
    const watchdog = o.leaseMs === undefined;
    const leaseMs = o.leaseMs ?? this.watchdogTimeoutMs;
    const t0 = Date.now();
    const deadline = t0 + waitMs;
    const willWait = waitMs > 0;

    let r = await this.attempt(lock, owner, leaseMs, willWait);
    if (r.code !== 'busy') return this.granted(lock, owner, r, leaseMs, watchdog, t0);
    this.metrics.contended();
    if (!willWait && !lock.fair) return null;

    const poll = this.o.wakeup === 'poll';
    const listener = poll || !willWait ? undefined : await this.notices.listen(lock.keys.channel);
    let acquired = false;
    try {
      while (willWait) {
        // Subscribed now: a release between the first attempt and here is caught by this attempt.
        r = await this.attempt(lock, owner, leaseMs, true);
        if (r.code !== 'busy') {
          acquired = true;
          return this.granted(lock, owner, r, leaseMs, watchdog, t0);
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) break;
        let sleep = r.waitMs >= 0 ? r.waitMs : NO_LEASE_RECHECK_MS;
        // Retry often enough to keep our place in line.
        sleep = Math.min(sleep, this.placeMs / 3, remaining, MAX_TIMER_MS);
        if (poll) sleep = Math.min(sleep, this.o.pollIntervalMs ?? 10);
        if (listener) await listener.wait(owner, sleep, o.signal);
        else await sleepFor(sleep, o.signal);
      }
      return null;
    } finally {
      listener?.release();
      if (!acquired) await this.leaveLine(lock, owner);
    }
  }

  /** Gives up a place in line; wakes the next waiter if that leaves a free lock unclaimed. */
  private async leaveLine(lock: DistributedLock, owner: string): Promise<void> {
    try {
      const { woken } = await protocol.leaveLine(this.o.redis, lock.keys, owner, this.processId);
      if (woken) this.notices.wakeLocal(lock.keys.channel, woken);
    } catch {
      // Unreachable Redis: our place lapses by itself.
    }
  }

  /**
   * One acquisition call. An acquisition that took as long as its lease may already have expired
   * (seed 003's `useTime < ttl`): it is released at once and reported as busy.
   */
  private async attempt(
    lock: DistributedLock,
    owner: string,
    leaseMs: number,
    willWait: boolean,
  ): Promise<protocol.AcquireReply & { startedAt: number; latencyMs: number }> {
    const startedAt = Date.now();
    const r = lock.fair
      ? await protocol.fairAcquire(this.o.redis, lock.keys, owner, leaseMs, this.placeMs)
      : await protocol.acquire(
          this.o.redis,
          lock.keys,
          owner,
          leaseMs,
          willWait ? this.placeMs : 0,
        );
    const latencyMs = Date.now() - startedAt;
    if (r.code !== 'busy' && latencyMs >= leaseMs) {
      await this.releaseOwner(lock, owner).catch(() => {});
      return { code: 'busy', waitMs: 0, startedAt, latencyMs };
    }
    return Object.assign(r, { startedAt, latencyMs });
  }

  private granted(
    lock: DistributedLock,
    owner: string,
    r: Exclude<protocol.AcquireReply, { code: 'busy' }> & { startedAt: number; latencyMs: number },
    leaseMs: number,
    watchdog: boolean,
    t0: number,
  ): Lease {
    const key = `${lock.keys.lock} ${owner}`;
    let hold = this.holds.get(key);
    if (r.code === 'acquired' || !hold) {
      hold?.lose('re-acquired after the lock was lost');
      hold = new Hold(
        lock.name,
        lock.keys,
        owner,
        r.fence,
        leaseMs,
        watchdog,
        r.startedAt,
        this.o.redis,
        this.holdEvents,
      );
      this.holds.set(key, hold);
    }
    hold.count = r.count;
    this.metrics.acquired({
      latencyMs: r.latencyMs,
      waitedMs: Date.now() - t0,
      reentrant: r.code === 'reentered',
      fair: lock.fair,
    });
    const h = hold;
    return {
      name: lock.name,
      owner,
      fence: h.fence,
      holdCount: r.count,
      get signal() {
        return h.signal;
      },
    };
  }

  /** Runs the release script; wakes the named waiter directly when it is one of ours. */
  private async releaseOwner(lock: DistributedLock, owner: string): Promise<protocol.ReleaseReply> {
    const r = await protocol.release(this.o.redis, lock.keys, owner, this.processId);
    if (r.code === 'released' && r.woken) this.notices.wakeLocal(lock.keys.channel, r.woken);
    return r;
  }

  /** @internal */
  async release(lock: DistributedLock, owner: string): Promise<'released' | 'still-held'> {
    const key = `${lock.keys.lock} ${owner}`;
    const hold = this.holds.get(key);
    const r = await this.releaseOwner(lock, owner);
    if (r.code === 'still-held') {
      if (hold) hold.count = r.count;
      return 'still-held';
    }
    this.holds.delete(key);
    await hold?.stop();
    if (r.code === 'not-held') {
      hold?.lose('its lease expired or another owner took it');
      throw new LockNotHeldError(lock.name, 'its lease expired or another owner took it');
    }
    return 'released';
  }

  /** @internal */
  async forceUnlock(lock: DistributedLock): Promise<boolean> {
    const { deleted, woken } = await protocol.forceUnlock(this.o.redis, lock.keys, this.processId);
    if (woken) this.notices.wakeLocal(lock.keys.channel, woken);
    for (const [key, hold] of this.holds) {
      if (key.startsWith(`${lock.keys.lock} `)) {
        this.holds.delete(key);
        await hold.stop();
        hold.lose('force-unlocked by an admin');
      }
    }
    return deleted;
  }

  /** @internal */
  ownerIn(ctx: LockContext): string {
    return `${this.processId}:${ctx.id}`;
  }

  /** @internal key of a lock in a context's `held` map (per client: tests run several). */
  heldKey(keys: LockKeys): string {
    return `${this.processId} ${keys.lock}`;
  }
}

function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
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

/**
 * A named lock (Redisson RLock). lock()/tryLock()/unlock() act for the current lock context;
 * the queries act on Redis directly.
 */
export class DistributedLock {
  constructor(
    private readonly client: LockClient,
    readonly name: string,
    readonly keys: LockKeys,
    readonly fair: boolean,
  ) {}

  private context(): LockContext {
    const ctx = currentContext();
    if (!ctx) throw new LockContextError(this.name);
    return ctx;
  }

  /**
   * Tries to take the lock for the current context, waiting up to `waitMs`.
   * @returns the lease, or null when the wait ran out.
   * @throws LockContextError outside a lock context; the signal's reason when aborted.
   */
  async tryLock(opts: TryLockOptions = {}): Promise<Lease | null> {
    const ctx = this.context();
    const held = this.client.heldKey(this.keys);
    const owner = ctx.held.get(held) ?? this.client.ownerIn(ctx);
    const lease = await this.client.acquireFor(this, owner, opts);
    if (lease) ctx.held.set(held, owner);
    return lease;
  }

  /** Waits for the lock as long as it takes (or until `signal` aborts). */
  async lock(opts: Omit<TryLockOptions, 'waitMs'> = {}): Promise<Lease> {
    return (await this.tryLock({ ...opts, waitMs: Infinity }))!;
  }

  /**
   * Releases one hold of the current context; the last one deletes the lock and wakes a waiter.
   * @throws LockNotHeldError when this context does not hold it (it never deletes another
   *   owner's lock).
   */
  async unlock(): Promise<void> {
    const ctx = this.context();
    const held = this.client.heldKey(this.keys);
    const owner = ctx.held.get(held);
    if (!owner) throw new LockNotHeldError(this.name, 'this context never took it');
    try {
      if ((await this.client.release(this, owner)) === 'released') ctx.held.delete(held);
    } catch (err) {
      if (err instanceof LockNotHeldError) ctx.held.delete(held);
      throw err;
    }
  }

  async isLocked(): Promise<boolean> {
    return (await this.client.redis.exists(this.keys.lock)) === 1;
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    const owner = currentContext()?.held.get(this.client.heldKey(this.keys));
    return owner !== undefined && (await this.client.redis.hexists(this.keys.lock, owner)) === 1;
  }

  /** Holds of the current context (0 when it holds none). */
  async holdCount(): Promise<number> {
    const owner = currentContext()?.held.get(this.client.heldKey(this.keys));
    if (!owner) return 0;
    return Number((await this.client.redis.hget(this.keys.lock, owner)) ?? 0);
  }

  /** Remaining lease in ms; null when not locked, Infinity when locked without a lease. */
  async remainingTtl(): Promise<number | null> {
    const ttl = await this.client.redis.pttl(this.keys.lock);
    return ttl === -2 ? null : ttl === -1 ? Infinity : ttl;
  }

  /** Admin: deletes the lock whoever holds it (their signal aborts at their next renewal). */
  forceUnlock(): Promise<boolean> {
    return this.client.forceUnlock(this);
  }
}

/** {@link HeldLock}: a lease plus its release. */
class Held implements HeldLock {
  constructor(
    private readonly lease: Lease,
    private readonly releaseFn: () => Promise<unknown>,
  ) {}
  get name() {
    return this.lease.name;
  }
  get owner() {
    return this.lease.owner;
  }
  get fence() {
    return this.lease.fence;
  }
  get holdCount() {
    return this.lease.holdCount;
  }
  get signal() {
    return this.lease.signal;
  }
  async release(): Promise<void> {
    await this.releaseFn();
  }
}
