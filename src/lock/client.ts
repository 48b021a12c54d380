/**
 * A Redisson-grade distributed lock for Node: reentrant per async context, lease + watchdog,
 * waiting on unlock notices (sharded pub/sub) instead of spinning, a fair mode, fencing tokens,
 * the acquisition-time check (an acquisition slower than its lease counts as failed), an
 * in-process latch per lock, and a hand-off reservation so no contender starves.
 *
 * ```ts
 * const locks = new LockClient({ redis, pubsub, keys });
 * await locks.withLock('report', async (signal, lease) => {
 *   await work({ signal, fence: lease.fence });
 * });
 * ```
 */
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import type { Keys, LockKeys } from '../redis/keys.js';
import type { PubSub } from '../redis/pubsub.js';
import {
  BaseLock,
  defaultAcquire,
  fairAcquire,
  type AcquireOptions,
  type LockMetrics,
  type LockRuntime,
} from './base-lock.js';
import { runInNewContext } from './context.js';
import { DistributedLock, type Lease } from './distributed-lock.js';
import { LocalLatch } from './latch.js';
import type { LeaseGuard } from './lease.js';
import { UnlockNotices } from './notices.js';
import { resolveLockSettings, type LockSettings } from './settings.js';

export type { LockMetrics } from './base-lock.js';
export type { Lease, TryLockOptions } from './distributed-lock.js';

export interface LockClientOptions extends Partial<LockSettings> {
  /** Command connection (scripts are registered on it). */
  redis: RedisClient;
  /** The process's shared subscriber. */
  pubsub: PubSub;
  keys: Keys;
  metrics?: LockMetrics;
}

/** A lock taken with {@link LockClient.acquire}: release it exactly once (one of the two). */
export interface HeldLock extends Lease {
  /** @throws LockNotHeldError when the lease ran out or another owner took the lock. */
  release(): Promise<void>;
  /**
   * Sends the command `before` issues while the lock is held, then the release, in one round
   * trip. `released` is 'not-held' when the lease ran out meanwhile.
   * @param before - must send its command synchronously (a script call does).
   * @throws the command's error, or the release's when the round trip failed.
   */
  releaseAfter<T>(before: () => Promise<T>): Promise<{
    result: T;
    released: 'released' | 'still-held' | 'not-held';
  }>;
}

/** A lock name's keys and its stateless handles, kept per name. */
interface LockEntry {
  keys: LockKeys;
  base?: BaseLock;
  fairBase?: BaseLock;
  context?: DistributedLock;
  fairContext?: DistributedLock;
}

/** Lock names whose key strings are kept (segment locks are reused all the time). */
const KEY_CACHE_SIZE = 10_000;

const noMetrics: LockMetrics = { acquired() {}, contended() {}, renewed() {}, lost() {} };

/** What {@link LockClient.acquire} hands out: methods on the prototype, no closures per hold. */
class HeldHandle implements HeldLock {
  readonly holdCount = 1;
  private released = false;

  constructor(
    private readonly lock: BaseLock,
    private readonly guard: LeaseGuard,
  ) {}

  get name(): string {
    return this.guard.name;
  }
  get owner(): string {
    return this.guard.owner;
  }
  get fence(): number {
    return this.guard.fence;
  }
  get signal(): AbortSignal {
    return this.guard.signal;
  }

  private once(): Error | undefined {
    if (this.released) return new Error(`lock "${this.guard.name}" was released already`);
    this.released = true;
    return undefined;
  }

  release(): Promise<void> {
    const twice = this.once();
    if (twice) return Promise.reject(twice);
    return this.lock.releaseAs(this.guard.owner).then(() => undefined);
  }

  releaseAfter<T>(before: () => Promise<T>) {
    const twice = this.once();
    if (twice) return Promise.reject(twice);
    return this.lock.releaseAfter(this.guard.owner, before);
  }
}

export class LockClient {
  readonly settings: LockSettings;
  readonly metrics: LockMetrics;
  private readonly rt: LockRuntime;
  private readonly lockCache = new Map<string, LockEntry>();
  private handles = 0;

  constructor(opts: LockClientOptions) {
    const { redis, pubsub, keys, metrics, ...given } = opts;
    this.settings = resolveLockSettings(given);
    this.metrics = metrics ?? noMetrics;
    const processId = randomUUID();
    this.entryOf = (name) => {
      let e = this.lockCache.get(name);
      if (!e) {
        if (this.lockCache.size >= KEY_CACHE_SIZE) this.lockCache.clear();
        e = { keys: keys.lock(name) };
        this.lockCache.set(name, e);
      }
      return e;
    };
    this.rt = {
      redis,
      settings: this.settings,
      processId,
      notices: new UnlockNotices(pubsub, processId),
      latch: new LocalLatch(),
      metrics: this.metrics,
      leaseEvents: { renewed: (ok) => this.metrics.renewed(ok), lost: () => this.metrics.lost() },
      guards: new Map(),
    };
  }

  /** Key names and handles of a lock, built once per name (bounded). */
  private readonly entryOf: (name: string) => LockEntry;

  /** Per-process part of every owner id. */
  get processId(): string {
    return this.rt.processId;
  }

  get redis(): RedisClient {
    return this.rt.redis;
  }

  /** A handle on the lock `name` (cheap; create as many as you like). */
  lock(name: string, opts: { fair?: boolean } = {}): DistributedLock {
    return this.contextLock(name, opts.fair === true);
  }

  private contextLock(name: string, fair: boolean): DistributedLock {
    // the handles hold no state of their own: one per name and mode serves every caller
    const e = this.entryOf(name);
    if (fair) return (e.fairContext ??= new DistributedLock(this.rt, name, e.keys, true));
    return (e.context ??= new DistributedLock(this.rt, name, e.keys, false));
  }

  /**
   * Takes the lock `name` with an owner id of its own: no lock context, no reentrancy. This is
   * the form for hot paths (the context API's AsyncLocalStorage adds promise hooks to the whole
   * process on Node 20).
   * @returns a handle to release, or null when the wait ran out.
   * @throws the signal's reason when `opts.signal` aborts the wait.
   */
  async acquire(
    name: string,
    opts: AcquireOptions & { fair?: boolean } = {},
  ): Promise<HeldLock | null> {
    const e = this.entryOf(name);
    const lock = opts.fair
      ? (e.fairBase ??= new BaseLock(this.rt, name, e.keys, fairAcquire))
      : (e.base ??= new BaseLock(this.rt, name, e.keys, defaultAcquire));
    const owner = `${this.rt.processId}:h${++this.handles}`;
    const guard = await lock.acquireAs(owner, opts, true);
    return guard && new HeldHandle(lock, guard);
  }

  /**
   * Whether nobody in this process holds or waits for the lock `name` (without the in-process
   * latch, always true: this process cannot tell). A caller that finds it idle may take the lock
   * inside its own write (the sale's lua/deductFree-11.lua, which checks Redis's side of it) rather
   * than through {@link acquire}; one that finds it busy lines up behind this process's holder.
   */
  idle(name: string): boolean {
    return !this.settings.localQueue || !this.rt.latch.busy(name);
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
    opts: AcquireOptions & { fair?: boolean } = {},
  ): Promise<T> {
    return this.contextLock(name, opts.fair === true).runLocked(fn, opts);
  }

  /** Stops every watchdog of this process (does not release; leases then run out). */
  async close(): Promise<void> {
    await Promise.all([...this.rt.guards.values()].map((g) => g.stop()));
    this.rt.guards.clear();
    this.rt.notices.close();
  }

  /** Number of holds this process currently renews or tracks (tests, metrics). */
  get activeHolds(): number {
    return this.rt.guards.size;
  }
}
