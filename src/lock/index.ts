export { type HeldLock, LockClient, type LockClientOptions, type LockMetrics } from './client.js';
export { DistributedLock, type Lease, type TryLockOptions } from './distributed-lock.js';
export {
  LockContextError,
  LockError,
  LockLostError,
  LockNotHeldError,
  LockTimeoutError,
} from './errors.js';
export { promLockMetrics } from './metrics.js';
export { RedLock, type RedLockLease, type RedLockOptions } from './redlock.js';
export { DEFAULT_LOCK_SETTINGS, resolveLockSettings, type LockSettings } from './settings.js';
