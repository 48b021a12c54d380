/**
 * A locked segment's deduct (the `global` and `segmented` strategies): the uncontended path, one
 * call that takes, fences and gives back a free lock (lua/deductFree-11.lua), and the full lock
 * protocol when the segment is contended (this process's line, then the lock's own line and
 * hand-off).
 */
import type { HeldLock, LockClient } from '../../lock/index.js';
import type { Logger } from '../../log.js';
import type { ActivityLeases, PurchaseDeductArgs as DeductArgs } from './activity-leases.js';
import type { ProductView } from '../catalogue/catalogue.js';
import type { DeductReply } from './protocol.js';

export interface SegmentLockingDeps {
  locks: LockClient;
  /** the lock name of a product's segment */
  lockName: (productId: string, seg: number) => string;
  leases: ActivityLeases;
  /** the keys of a product's segment (cached by the caller) */
  segment: (productId: string, seg: number) => Parameters<ActivityLeases['deduct']>[0];
  /** Lease of a segment lock held around one deduct. */
  lockLeaseMs: number;
  /** sends what `send` sends at once, not with the turn's batch (redis/connection.ts sendNow) */
  sendNow: <T>(send: () => T) => T;
  logger?: Logger | undefined;
}

export class SegmentLocking {
  constructor(private readonly deps: SegmentLockingDeps) {}

  /**
   * Takes a segment's lock: up to `queueMs` in this process's line for it, then `waitMs` in Redis.
   * A purchase whose product sold out (or segment emptied) while it queued gives up without a
   * Redis command.
   */
  lock(view: ProductView, seg: number, waitMs: number, queueMs = waitMs): Promise<HeldLock | null> {
    return this.deps.locks.acquire(this.deps.lockName(view.id, seg), {
      waitMs,
      queueMs,
      leaseMs: this.deps.lockLeaseMs,
      stillWanted: () => !view.soldOut && !view.empty.has(seg),
    });
  }

  /**
   * The uncontended path of a locked segment: when nobody in this process holds or waits for the
   * segment's lock, the deduct takes the lock, fences and gives it back in the same call
   * (lua/deductFree-11.lua): the one round trip of a lock-free deduct and two commands more, where
   * the full protocol costs two round trips and eleven commands more. Its answer is
   * `contended` when Redis says someone holds, waits for or is handed the lock: then the full
   * protocol (this process's line, then the lock's own) takes over, so no waiter is passed.
   * @returns undefined when this process already has someone on the lock (no Redis command).
   */
  deductIfFree(view: ProductView, args: DeductArgs): Promise<DeductReply> | undefined {
    if (!this.idle(view.id, args.segment)) return;
    return this.deps.leases.deduct(this.deps.segment(view.id, args.segment), args, true);
  }

  /** this process's touches of the active set (every deduct needs one) */
  get leases(): ActivityLeases {
    return this.deps.leases;
  }

  /** Whether nobody in this process holds or waits for the segment's lock. */
  idle(productId: string, seg: number): boolean {
    return this.deps.locks.idle(this.deps.lockName(productId, seg));
  }

  /**
   * The deduct under a held segment lock, fenced by its token, and the release, in one round trip
   * (the deduct runs first, while the lock is held).
   */
  async deductHolding(held: HeldLock, args: DeductArgs): Promise<DeductReply> {
    const keys = this.deps.segment(args.productId, args.segment);
    // sent now, not with the turn's batch: the lock is held until this round trip is back
    const { result, released } = await this.deps.sendNow(() =>
      held.releaseAfter(() => this.deps.leases.deduct(keys, { ...args, fence: held.fence })),
    );
    // A lease that ran out is harmless here: the fence already kept a newer holder's writes safe.
    if (released === 'not-held') {
      this.deps.logger?.warn({ lock: held.name }, 'segment lock lease ran out during the deduct');
    }
    return result;
  }
}
