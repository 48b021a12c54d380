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
 * Runs `fn` in a new lock context: a new owner.
 * @param inherit - carry over what the enclosing context holds, so a nested withLock on a lock
 *   the caller already holds re-enters it instead of deadlocking (default false: a clean context).
 */
export function runInNewContext<T>(fn: () => T, inherit = false): T {
  const parent = inherit ? storage.getStore() : undefined;
  return storage.run({ id: nextId++, held: new Map(parent?.held) }, fn);
}
