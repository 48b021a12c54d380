/**
 * The active set: the products that may have work for the sweeper (outbox entries, open spill
 * claims). The catalogue only grows; this set holds the sales being seeded, sold or settled, and
 * lets the quiet ones go (archived: still in the catalogue, readable and reconcilable).
 *
 * A Redis Cluster cannot add to one set atomically from a segment's script (other slot), so the
 * set is kept by leases instead (activity-timing.ts): a purchase touches the product
 * (lua/activeTouch-1.lua) before its deduct, which refuses a touch older than its lease; the
 * sweeper archives (lua/activeArchive-1.lua) only a product whose time ran out well before its
 * read found no work, and only if nobody touched it since.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys, SegmentKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';
import { QUIET_MS, TOUCH_REFRESH_MS } from '../activity-timing.js';
import { deduct, deductFree, type DeductArgs, type DeductReply } from '../protocol.js';

/** A deduct script's call (protocol.ts, keyed-deduct.ts), as {@link ActivityLeases.deductBy} runs it. */
export type DeductCall<R> = (redis: RedisClient, keys: SegmentKeys, args: DeductArgs) => Promise<R>;

/** A purchase's deduct arguments: the touch is the leases' to add. */
export type PurchaseDeductArgs = Omit<DeductArgs, 'touchedAt'>;

const scripts = {
  touch: luaScript('activeTouch'),
  archive: luaScript('activeArchive'),
};

/**
 * Keeps `productId` active until at least `untilMs` (its sale's start or end) plus the quiet
 * period, and at least the quiet period from now. @returns the Redis time of the touch.
 */
export async function touchActive(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  untilMs = 0,
): Promise<number> {
  return Number(
    await scripts.touch.run(deps.redis, [deps.keys.active()], [productId, QUIET_MS, untilMs]),
  );
}

/** Archives `productId` unless it was touched since its score read `score`. */
export async function archiveIfUntouched(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  score: number,
): Promise<boolean> {
  return (await scripts.archive.run(deps.redis, [deps.keys.active()], [productId, score])) === 1;
}

/** The active products with the time each stays until (ms), or the `max` that stay longest. */
export async function activeProducts(
  deps: { redis: RedisClient; keys: Keys },
  max?: number,
): Promise<Array<{ productId: string; until: number }>> {
  const flat =
    max === undefined
      ? await deps.redis.zrange(deps.keys.active(), '0', '-1', 'WITHSCORES')
      : await deps.redis.zrange(
          deps.keys.active(),
          '+inf',
          '-inf',
          'BYSCORE',
          'REV',
          'LIMIT',
          0,
          max,
          'WITHSCORES',
        );
  const out: Array<{ productId: string; until: number }> = [];
  for (let i = 0; i < flat.length; i += 2) {
    out.push({ productId: flat[i]!, until: Number(flat[i + 1]) });
  }
  return out;
}

/**
 * This process's touches, one per product, refreshed when TOUCH_REFRESH_MS old: a purchase costs
 * a touch only a few times a minute per product and process.
 */
export class ActivityLeases {
  private readonly touched = new Map<string, { at: number; localAt: number }>();
  private readonly touching = new Map<string, Promise<number>>();

  constructor(private readonly deps: { redis: RedisClient; keys: Keys }) {}

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
