/**
 * A purchase's per-shopper rate limit folded into its sale: the shopper's bucket lives in the home
 * segment's slot, so the home deduct takes its cell in the same call (lua/deduct-7.lua KEYS[7],
 * lua/deductFree-11.lua), with the deduct's own TIME; one script less per purchase than a take of
 * its own. The first home call that gets past the answers that make it call again (unknown,
 * staleEpoch, untouched) takes the cell, and its reply carries the bucket's answer; the purchase's
 * later calls (a retry on a new view, the deduct under a lock the free call found contended, a
 * claim) take none, and spills never do. Refused, the purchase ends rate-limited, having changed
 * nothing.
 */
import type { RateLimit } from '../../config/index.js';
import { intervalUs, type RateDecision } from '../../redis/rate-limit.js';
import { PURCHASE_ROUTE, type DeductArgs, type DeductReply } from '../protocol.js';

/**
 * The home deduct's bucket arguments: none without a limit, nor once a call of this purchase took
 * the cell (`taken`: the bucket's answer it brought).
 */
export function bucketToTake(
  limit: RateLimit | undefined,
  taken: RateDecision | undefined,
): DeductArgs['bucket'] {
  if (!limit || taken) return undefined;
  return { intervalUs: intervalUs(limit), burst: limit.burst };
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
  userId: string,
  limit: RateLimit,
): Promise<DeductReply> {
  const bucket = await takeRate(homeKeys.shopperRateLimit(PURCHASE_ROUTE, userId), limit);
  return { code: bucket.allowed ? 'contended' : 'rate-limited', bucket };
}
