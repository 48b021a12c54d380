/**
 * Order ids: UUIDs (PostgreSQL's uuid column, the API's format) that carry their product's
 * catalogue number, so an order is found from its id alone: the first 32 bits are the number, the
 * version nibble is 8 (RFC 9562's custom layout), the other 90 bits are random. Ids minted before
 * (random v4 UUIDs, still in PostgreSQL and in outboxes) carry none: {@link orderProductNumber}
 * says so, and their lookups fall back to PostgreSQL and a bounded search.
 */
import { randomUUID } from 'node:crypto';

/** Largest catalogue number an id can carry. */
export const MAX_CATALOGUE_NUMBER = 0xffff_ffff;

/**
 * A new order id for a product with catalogue number `catalogueNumber` (0: none known yet, a v4
 * UUID). Made from a v4 UUID (Node draws those from a pooled random buffer; a randomBytes call per
 * id was 5 % of the API's CPU per sale): its first 32 bits become the number, its version nibble 8;
 * its variant bits are already RFC 9562's.
 */
export function mintOrderId(catalogueNumber: number): string {
  const uuid = randomUUID();
  if (
    !Number.isInteger(catalogueNumber) ||
    catalogueNumber <= 0 ||
    catalogueNumber > MAX_CATALOGUE_NUMBER
  )
    return uuid;
  return `${catalogueNumber.toString(16).padStart(8, '0')}${uuid.slice(8, 14)}8${uuid.slice(15)}`;
}

const V8 = /^([0-9a-f]{8})-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The catalogue number an order id carries; undefined for an id of the older format. */
export function orderProductNumber(orderId: string): number | undefined {
  const m = V8.exec(orderId);
  if (!m) return undefined;
  const n = parseInt(m[1]!, 16);
  return n > 0 ? n : undefined;
}
