export {
  DistributedLock,
  type HeldLock,
  LockClient,
  type Lease,
  type LockClientOptions,
  type LockMetrics,
  type TryLockOptions,
} from './client.js';
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
