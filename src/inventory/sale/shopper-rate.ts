/**
 * A purchase's per-shopper rate limit folded into its sale: the shopper's bucket lives
 * in the home segment's slot, so the home deduct takes its cell in the same call
 * (lua/deduct-7.lua KEYS[7], lua/deductFree-11.lua), with the deduct's own TIME; one script less
 * per purchase than a take of its own.
 */
import type { RateLimit } from '../../config/index.js';
import { intervalUs, type RateDecision } from '../../redis/rate-limit.js';
import { ShopperRateLimited } from '../errors.js';
import { PURCHASE_ROUTE, type DeductArgs, type DeductReply } from '../protocol.js';

/**
 * The shopper's limit, handed to the sale: the first home call that gets past the answers that
 * make it call again (unknown, staleEpoch, untouched) takes the cell and the sale sets `decision`;
 * the purchase's later calls (a retry on a new view, the deduct under a lock the free call found
 * contended, a claim) take none, and spills never do. Refused: the sale throws
 * ShopperRateLimited, having changed nothing.
 */
export interface ShopperRate {
  userId: string;
  limit: RateLimit;
  /** the bucket's answer, once a call of this purchase asked it */
  decision?: RateDecision | undefined;
}

/** The deduct's bucket arguments: none once this purchase's cell was asked for. */
export function bucketToTake(rate: ShopperRate | undefined): DeductArgs['bucket'] {
  if (!rate || rate.decision) return undefined;
  return { intervalUs: intervalUs(rate.limit), burst: rate.limit.burst };
}

/**
 * Records the bucket's answer a home call brought; the purchase's later calls ask none.
 * @throws ShopperRateLimited when it refused the cell
 */
export function noteBucket(
  args: { bucket?: DeductArgs['bucket'] },
  rate: ShopperRate | undefined,
  /** a deduct's reply, or the keyed deduct's (its `full` carries the bucket too) */
  reply: Pick<DeductReply, 'bucket'> & { code: string },
): void {
  if (!reply.bucket || !rate) return;
  rate.decision = reply.bucket;
  args.bucket = undefined;
  if (reply.code === 'rate-limited') throw new ShopperRateLimited();
}

/**
 * The shopper's cell taken on its own (lua/rateLimit-1.lua, the same key and GCRA), for a
 * purchase about to wait in this process's line for its home lock, where no free call is made:
 * `rate-limited`, or `contended` (the cell is taken: go the full way).
 */
export async function takeBucket(
  takeRate: (key: string, limit: RateLimit) => Promise<RateDecision>,
  /** the home segment's keys (redis/keys.ts SegmentKeys) */
  homeKeys: { shopperRateLimit(route: string, userId: string): string },
  rate: ShopperRate & { userId: string },
): Promise<DeductReply> {
  const key = homeKeys.shopperRateLimit(PURCHASE_ROUTE, rate.userId);
  const bucket = await takeRate(key, rate.limit);
  return { code: bucket.allowed ? 'contended' : 'rate-limited', bucket };
}
