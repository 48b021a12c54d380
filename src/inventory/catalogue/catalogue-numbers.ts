/**
 * Catalogue numbers: each product gets one, for good (lua/catalogueNumber-1.lua), kept in its meta
 * (`n`) and in the catalogue hash both ways. Order ids carry it (order-ids.ts), so finding an
 * order's product is one HGET, whatever the size of the catalogue.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { catalogueNumber } from './protocol.js';
import { CATALOGUE_FIELD } from '../records/hash-fields.js';
import { META_FIELD } from '../records/product-meta.js';

/** Gives `productId` its catalogue number (the one it has, if any) and writes it to its meta. */
export async function giveCatalogueNumber(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
): Promise<number> {
  const n = await catalogueNumber(deps.redis, deps.keys.catalogue(), productId);
  await deps.redis.hset(deps.keys.product(productId).meta, META_FIELD.number, n);
  return n;
}

/** The product with catalogue number `n`; null when none has it. */
export function productOfNumber(
  deps: { redis: RedisClient; keys: Keys },
  catalogueNumber: number,
): Promise<string | null> {
  return deps.redis.hget(deps.keys.catalogue(), `${CATALOGUE_FIELD.number}${catalogueNumber}`);
}
