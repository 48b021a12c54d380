/** The two ways one attempt asks Redis for a lock: the default mode and the fair mode. */
import type { RedisClient } from '../redis/connection.js';
import type { LockKeys } from '../redis/keys.js';
import * as protocol from './protocol.js';

/** One attempt: `wait` joins the line when busy; `inLine`: the owner joined it before. */
export interface AttemptArgs {
  owner: string;
  leaseMs: number;
  wait: boolean;
  inLine: boolean;
  handoffMs: number;
  /** false: the owner cannot hold the lock already (a fresh handle), no re-entry check */
  mayReenter: boolean;
}

/** How one attempt asks Redis for the lock: the default and the fair mode. */
export interface AcquireStrategy {
  readonly fair: boolean;
  attempt(redis: RedisClient, keys: LockKeys, args: AttemptArgs): Promise<protocol.AcquireReply>;
}

export const defaultAcquire: AcquireStrategy = {
  fair: false,
  attempt: (redis, keys, args) =>
    protocol.acquire(
      redis,
      keys,
      args.owner,
      args.leaseMs,
      args.wait ? 1 : 0,
      args.inLine,
      args.mayReenter,
    ),
};

export const fairAcquire: AcquireStrategy = {
  fair: true,
  attempt: (redis, keys, args) =>
    protocol.acquireFair(
      redis,
      keys,
      args.owner,
      args.leaseMs,
      args.wait ? 1 : 0,
      args.inLine,
      args.handoffMs,
      args.mayReenter,
    ),
};
