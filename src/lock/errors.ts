/** Typed lock errors; each carries the lock name. */
export class LockError extends Error {
  constructor(
    readonly lockName: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** unlock() by a context that does not hold the lock (never held, lease expired, taken over). */
export class LockNotHeldError extends LockError {
  constructor(lockName: string, why: string) {
    super(lockName, `lock "${lockName}" is not held by this context: ${why}`);
  }
}

/** The holder's AbortSignal aborts with this when the lock is lost while held. */
export class LockLostError extends LockError {
  constructor(lockName: string, why: string, options?: { cause?: unknown }) {
    super(lockName, `lock "${lockName}" was lost: ${why}`, options);
  }
}

/** withLock()/lock() gave up: the wait ran out before the lock was free. */
export class LockTimeoutError extends LockError {
  constructor(lockName: string, waitMs: number) {
    super(lockName, `lock "${lockName}" not acquired within ${waitMs} ms`);
  }
}

/** lock()/unlock() called outside a lock context (see LockClient.runInContext). */
export class LockContextError extends LockError {
  constructor(lockName: string) {
    super(
      lockName,
      `lock "${lockName}": lock()/tryLock()/unlock() need a lock context; ` +
        'wrap the caller in locks.runInContext(fn) or use locks.withLock(name, fn)',
    );
  }
}
