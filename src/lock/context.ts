/**
 * Lock contexts: the Node analogue of Redisson's thread id. An owner id is the process UUID plus
 * the id of the async context that took the lock (AsyncLocalStorage), so re-entering in the same
 * context increments the hold count while a concurrent request in the same process is a
 * different owner.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface LockContext {
  readonly id: number;
  /** "<client process id> <lock key>" -> owner id, for the locks this context holds. */
  readonly held: Map<string, string>;
}

const storage = new AsyncLocalStorage<LockContext>();
let nextId = 1;

export function currentContext(): LockContext | undefined {
  return storage.getStore();
}

/**
 * A new lock context: a new owner, its id never used before.
 * @param parent - its holds are carried over, so a nested withLock on a lock the caller already
 *   holds re-enters it instead of deadlocking (omit it for a clean context).
 */
export function newContext(parent?: LockContext): LockContext {
  return { id: nextId++, held: new Map(parent?.held) };
}

/** Runs `fn` in the lock context `ctx`. */
export function runIn<T>(ctx: LockContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** Runs `fn` in a new, clean lock context: a new owner. */
export function runInNewContext<T>(fn: () => T): T {
  return storage.run(newContext(), fn);
}
