/**
 * Orders that are sold but not yet persisted live only in Redis: in the buyer's marker (or open
 * spill claim) at their home segment, and in the outbox of the segment they were sold from.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { activeProducts } from '../catalogue/active-set.js';
import { productOfNumber } from '../catalogue/catalogue-numbers.js';
import { homeSegment } from '../layout.js';
import { orderProductNumber } from '../order-ids.js';
import { resolveOrder, type OrderResolution } from './protocol.js';
import { decodeClaim } from '../records/claim.js';
import { decodeMarker } from '../records/marker.js';
import { decodeOutboxEntry, type SoldOrder, type StreamEntry } from '../records/outbox-entry.js';
import { decodeMeta } from '../records/product-meta.js';

export interface PendingOrderRef {
  productId: string;
  userId: string;
  /** true while the order is an open spill claim (its deduct may still be running) */
  claimOnly: boolean;
}

/**
 * An id of the older format (no catalogue number) is looked for in this many active products, the
 * most recently active first: a bounded search, never the whole catalogue. Such orders are
 * mostly in PostgreSQL already (callers ask it first).
 */
export const LEGACY_ID_SEARCH = 50;

/**
 * The products `orderId` can be in: its own (from the catalogue number it carries: one HGET), or
 * for an id of the older format the most recently active ones.
 */
export async function productsOfOrder(
  deps: { redis: RedisClient; keys: Keys },
  orderId: string,
): Promise<string[]> {
  const n = orderProductNumber(orderId);
  if (n === undefined) {
    return (await activeProducts(deps, LEGACY_ID_SEARCH)).map((p) => p.productId);
  }
  const productId = await productOfNumber(deps, n);
  return productId === null ? [] : [productId];
}

/** The product whose marker (or open claim) of `userId` lists `orderId`, if any. */
export async function findPendingOrder(
  deps: { redis: RedisClient; keys: Keys },
  userId: string,
  orderId: string,
): Promise<PendingOrderRef | undefined> {
  for (const productId of await productsOfOrder(deps, orderId)) {
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

/**
 * What became of an order whose purchase got no answer, settled at the shopper's home segment:
 * sold, pending (an open spill claim), or voided (not sold, and a late deduct of it is refused).
 * Null for a product that does not exist (any more).
 */
export async function resolveOrderAtHome(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  userId: string,
  orderId: string,
  voidTtlSeconds: number,
): Promise<OrderResolution | null> {
  const meta = decodeMeta(await deps.redis.hgetall(deps.keys.product(productId).meta));
  if (!meta) return null;
  const home = deps.keys.segment(productId, homeSegment(userId, meta.segments));
  return resolveOrder(deps.redis, home, userId, orderId, voidTtlSeconds);
}

/** Entries read per XRANGE call while looking for one order. */
const SCAN_BATCH = 1_000;

/**
 * The outbox entry of `orderId` in any segment of `productId` (sold, not yet persisted), or
 * undefined. Reads each outbox in batches; an outbox holds only what the workers have not
 * persisted yet, so this stays small unless persistence is stalled.
 */
export async function findInOutboxes(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  orderId: string,
): Promise<SoldOrder | undefined> {
  const meta = decodeMeta(await deps.redis.hgetall(deps.keys.product(productId).meta));
  if (!meta) return undefined;
  for (let seg = 0; seg < meta.maxSegments; seg++) {
    const outbox = deps.keys.segment(productId, seg).outbox;
    let from = '-';
    for (;;) {
      const batch = (await deps.redis.xrange(
        outbox,
        from,
        '+',
        'COUNT',
        SCAN_BATCH,
      )) as StreamEntry[];
      for (const e of batch) {
        const order = decodeOutboxEntry(e);
        if (order.orderId === orderId) return order;
      }
      if (batch.length < SCAN_BATCH) break;
      from = `(${batch.at(-1)![0]}`;
    }
  }
  return undefined;
}

/** The outbox entry of `orderId` in its product (an admin does not know the buyer). */
export async function findInAllOutboxes(
  deps: { redis: RedisClient; keys: Keys },
  orderId: string,
): Promise<SoldOrder | undefined> {
  for (const productId of await productsOfOrder(deps, orderId)) {
    const order = await findInOutboxes(deps, productId, orderId);
    if (order) return order;
  }
  return undefined;
}
