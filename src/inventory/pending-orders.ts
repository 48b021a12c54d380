/**
 * Orders that are sold but not yet persisted live only in Redis: in the buyer's marker (or open
 * spill claim) at their home segment, and in the outbox of the segment they were sold from.
 */
import type { Redis } from 'ioredis';
import type { Keys } from '../redis/keys.js';
import { homeSegment } from './layout.js';
import { decodeClaim } from './records/claim.js';
import { decodeMarker } from './records/marker.js';
import { decodeMeta } from './records/product-meta.js';

export interface PendingOrderRef {
  productId: string;
  userId: string;
  /** true while the order is an open spill claim (its deduct may still be running) */
  claimOnly: boolean;
}

/** The product whose marker (or open claim) of `userId` lists `orderId`, if any. */
export async function findPendingOrder(
  deps: { redis: Redis; keys: Keys },
  userId: string,
  orderId: string,
): Promise<PendingOrderRef | undefined> {
  for (const productId of await deps.redis.smembers(deps.keys.products())) {
    const meta = decodeMeta(await deps.redis.hgetall(deps.keys.product(productId).meta));
    if (!meta) continue;
    const k = deps.keys.segment(productId, homeSegment(userId, meta.segments));
    const [marker, claim] = await Promise.all([
      deps.redis.hget(k.buyers, userId),
      deps.redis.hget(k.claims, userId),
    ]);
    if (decodeMarker(marker)?.orderIds.includes(orderId)) {
      return { productId, userId, claimOnly: false };
    }
    if (decodeClaim(claim)?.orderId === orderId) return { productId, userId, claimOnly: true };
  }
  return undefined;
}
