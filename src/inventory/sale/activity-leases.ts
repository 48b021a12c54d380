/**
 * This process's leases on the active set (catalogue/active-set.ts): a purchase touches its product
 * before its deduct, and the deduct refuses a touch older than TOUCH_LEASE_MS.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { SegmentKeys } from '../../redis/keys.js';
import { TOUCH_REFRESH_MS } from '../activity-timing.js';
import { touchActive } from '../catalogue/active-set.js';
import { deduct, deductFree, type DeductArgs, type DeductReply } from './protocol.js';

/** A deduct script's call (protocol.ts, keyed-deduct.ts), as {@link ActivityLeases.deductBy} runs it. */
export type DeductCall<R> = (redis: RedisClient, keys: SegmentKeys, args: DeductArgs) => Promise<R>;

/** A purchase's deduct arguments: the touch is the leases' to add. */
export type PurchaseDeductArgs = Omit<DeductArgs, 'touchedAt'>;

/**
 * This process's touches, one per product, refreshed when TOUCH_REFRESH_MS old: a purchase costs
 * a touch only a few times a minute per product and process.
 */
export class ActivityLeases {
  private readonly touched = new Map<string, { at: number; localAt: number }>();
  private readonly touching = new Map<string, Promise<number>>();

  constructor(private readonly deps: Parameters<typeof touchActive>[0]) {}

  /** The Redis time of a touch fresh enough for a deduct. */
  lease(productId: string): number | Promise<number> {
    const t = this.touched.get(productId);
    if (t && Date.now() - t.localAt < TOUCH_REFRESH_MS) return t.at;
    return this.refresh(productId);
  }

  private refresh(productId: string): Promise<number> {
    let p = this.touching.get(productId);
    if (!p) {
      p = touchActive(this.deps, productId)
        .then((at) => {
          this.touched.set(productId, { at, localAt: Date.now() });
          return at;
        })
        .finally(() => this.touching.delete(productId));
      this.touching.set(productId, p);
    }
    return p;
  }

  /**
   * The deduct, under a fresh touch; a touch the script found too old (a paused process, a clock
   * step) is renewed and the deduct run once more.
   */
  deduct(
    segmentKeys: SegmentKeys,
    args: PurchaseDeductArgs,
    /** the segment's lock is free as far as this process knows: take it in the call (deductFree) */
    lockFree = false,
  ): Promise<DeductReply> {
    return this.deductBy(lockFree ? deductFree : deduct, segmentKeys, args);
  }

  /** {@link deduct} by another deduct script (keyed-deduct.ts: the deduct with the key's record). */
  async deductBy<R extends { code: string }>(
    run: DeductCall<R>,
    segmentKeys: SegmentKeys,
    args: PurchaseDeductArgs,
  ): Promise<R> {
    const lease = this.lease(args.productId);
    let touchedAt = typeof lease === 'number' ? lease : await lease;
    let r = await run(this.deps.redis, segmentKeys, { ...args, touchedAt });
    if (r.code === 'untouched') {
      this.touched.delete(args.productId);
      touchedAt = await this.refresh(args.productId);
      r = await run(this.deps.redis, segmentKeys, { ...args, touchedAt });
      if (r.code === 'untouched') throw new Error('deduct refused a touch it was just given');
    }
    return r;
  }
}
