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
import { currentContext, newContext, runIn, runInNewContext, type LockContext } from './context.js';
import { LockContextError, LockNotHeldError, LockTimeoutError } from './errors.js';
import { LocalLatch } from './latch.js';
import type { LeaseGuard } from './lease.js';
import { UnlockNotices } from './notices.js';
import * as protocol from './protocol.js';
import { resolveLockSettings, type LockSettings } from './settings.js';

export type { LockMetrics } from './base-lock.js';
export type TryLockOptions = AcquireOptions;

export interface LockClientOptions extends Partial<LockSettings> {
  /** Command connection (scripts are registered on it). */
  redis: RedisClient;
  /** The process's shared subscriber. */
  pubsub: PubSub;
  keys: Keys;
  metrics?: LockMetrics;
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

/** A context's lease: a class, as an object literal with a getter is built slowly per hold. */
class ContextLease implements Lease {
  readonly name: string;
  readonly owner: string;
  readonly fence: number;

  constructor(
    private readonly guard: LeaseGuard,
    readonly holdCount: number,
  ) {
    this.name = guard.name;
    this.owner = guard.owner;
    this.fence = guard.fence;
  }

  get signal(): AbortSignal {
    return this.guard.signal;
  }
}

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

/**
 * A named lock (Redisson RLock). lock()/tryLock()/unlock() act for the current lock context;
 * the queries act on Redis directly.
 */
export class DistributedLock extends BaseLock {
  constructor(rt: LockRuntime, name: string, keys: LockKeys, fair: boolean) {
    super(rt, name, keys, fair ? fairAcquire : defaultAcquire);
    this.heldKey = `${rt.processId} ${keys.lock}`;
  }

  private context(): LockContext {
    const ctx = currentContext();
    if (!ctx) throw new LockContextError(this.name);
    return ctx;
  }

  /** Key of this lock in a context's `held` map (per client: tests run several). */
  private readonly heldKey: string;

  /**
   * Tries to take the lock for the current context, waiting up to `waitMs`.
   * @returns the lease, or null when the wait ran out.
   * @throws LockContextError outside a lock context; the signal's reason when aborted.
   */
  async tryLock(opts: TryLockOptions = {}): Promise<Lease | null> {
    return this.tryLockIn(this.context(), opts, opts.waitMs ?? 0);
  }

  private async tryLockIn(
    ctx: LockContext,
    opts: TryLockOptions,
    waitMs: number,
  ): Promise<Lease | null> {
    const owner = ctx.held.get(this.heldKey) ?? `${this.rt.processId}:${ctx.id}`;
    const guard = await this.acquireAs(owner, opts, false, waitMs);
    if (!guard) return null;
    ctx.held.set(this.heldKey, owner);
    return new ContextLease(guard, guard.count);
  }

  /** Waits for the lock as long as it takes (or until `signal` aborts). */
  async lock(opts: Omit<TryLockOptions, 'waitMs'> = {}): Promise<Lease> {
    return (await this.tryLockIn(this.context(), opts, Infinity))!;
  }

  /**
   * {@link LockClient.withLock}'s body: runs `fn` in a new context that holds this lock. That
   * context's owner id was never used, so unless it inherited a hold of this lock from the
   * caller's context (a nested withLock, which re-enters) it takes the lock as a fresh owner: no
   * re-entry check, neither here nor in Redis.
   */
  runLocked<T>(
    fn: (signal: AbortSignal, lease: Lease) => Promise<T> | T,
    opts: TryLockOptions,
  ): Promise<T> {
    const ctx = newContext(currentContext());
    const inherited = ctx.held.get(this.heldKey);
    const owner = inherited ?? `${this.rt.processId}:${ctx.id}`;
    return runIn(ctx, () => this.holdAround(ctx, owner, inherited === undefined, fn, opts));
  }

  private async holdAround<T>(
    ctx: LockContext,
    owner: string,
    fresh: boolean,
    fn: (signal: AbortSignal, lease: Lease) => Promise<T> | T,
    opts: TryLockOptions,
  ): Promise<T> {
    const waitMs = opts.waitMs ?? Infinity;
    // tryLockIn's steps inline: one async call (and promise) less per section
    const guard = await this.acquireAs(owner, opts, fresh, waitMs);
    if (!guard) throw new LockTimeoutError(this.name, waitMs);
    ctx.held.set(this.heldKey, owner);
    const lease = new ContextLease(guard, guard.count);
    let result: T;
    try {
      const r = fn(lease.signal, lease);
      // a synchronous fn's result needs no turn of the microtask queue before the release
      result = isThenable(r) ? await r : r;
    } catch (err) {
      await this.unlockIn(ctx).catch(() => {});
      throw err;
    }
    await this.unlockIn(ctx);
    return result;
  }

  /**
   * Releases one hold of the current context; the last one deletes the lock and wakes a waiter.
   * @throws LockNotHeldError when this context does not hold it (it never deletes another
   *   owner's lock).
   */
  async unlock(): Promise<void> {
    return this.unlockIn(this.context());
  }

  private async unlockIn(ctx: LockContext): Promise<void> {
    const owner = ctx.held.get(this.heldKey);
    if (!owner) throw new LockNotHeldError(this.name, 'this context never took it');
    try {
      if ((await this.releaseAs(owner)) === 'released') ctx.held.delete(this.heldKey);
    } catch (err) {
      if (err instanceof LockNotHeldError) ctx.held.delete(this.heldKey);
      throw err;
    }
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.holdCount()) > 0;
  }

  /** Holds of the current context (0 when it holds none). */
  async holdCount(): Promise<number> {
    const owner = currentContext()?.held.get(this.heldKey);
    if (!owner) return 0;
    return protocol.holdCount(this.rt.redis, this.keys, owner);
  }
}

function isThenable<T>(x: Promise<T> | T): x is Promise<T> {
  return typeof (x as { then?: unknown } | null | undefined)?.then === 'function';
}
