/** The context API (Redisson RLock): a named lock taken for the current lock context. */
import {
  BaseLock,
  defaultAcquire,
  fairAcquire,
  type AcquireOptions,
  type LockRuntime,
} from './base-lock.js';
import { currentContext, newContext, runIn, type LockContext } from './context.js';
import { LockContextError, LockNotHeldError, LockTimeoutError } from './errors.js';
import type { LeaseGuard } from './lease.js';
import * as protocol from './protocol.js';

export type TryLockOptions = AcquireOptions;

export interface Lease {
  readonly name: string;
  readonly owner: string;
  /** Fencing token: strictly increasing per lock across holders; pass it to the resource. */
  readonly fence: number;
  readonly holdCount: number;
  /** Aborts with LockLostError when the lock is lost while held (watchdog or lease). */
  readonly signal: AbortSignal;
}

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

/**
 * A named lock (Redisson RLock). lock()/tryLock()/unlock() act for the current lock context;
 * the queries act on Redis directly.
 */
export class DistributedLock extends BaseLock {
  // (the keys' type through BaseLock: no more importers of the key layout)
  constructor(rt: LockRuntime, name: string, keys: BaseLock['keys'], fair: boolean) {
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

function isThenable<T>(result: Promise<T> | T): result is Promise<T> {
  return typeof (result as { then?: unknown } | null | undefined)?.then === 'function';
}
