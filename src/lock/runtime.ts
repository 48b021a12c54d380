/** What every lock of one client shares, and the metrics hooks a client reports to. */
import type { RedisClient } from '../redis/connection.js';
import type { LocalLatch } from './latch.js';
import type { LeaseEvents, LeaseGuard } from './lease.js';
import type { UnlockNotices } from './notices.js';
import type { LockSettings } from './settings.js';

export interface LockMetrics {
  /** A successful acquisition: the winning call's latency and the whole wait. */
  acquired(event: { latencyMs: number; waitedMs: number; reentrant: boolean; fair: boolean }): void;
  /** A first attempt found the lock held by someone else. */
  contended(): void;
  renewed(ok: boolean): void;
  lost(): void;
}

/** What every lock of one client shares: connections, settings, and the holds it tracks. */
export interface LockRuntime {
  readonly redis: RedisClient;
  readonly settings: LockSettings;
  /** Per-process part of every owner id. */
  readonly processId: string;
  readonly notices: UnlockNotices;
  readonly latch: LocalLatch;
  readonly metrics: LockMetrics;
  readonly leaseEvents: LeaseEvents;
  /** `<lock key> <owner>` -> its hold */
  readonly guards: Map<string, LeaseGuard>;
}
