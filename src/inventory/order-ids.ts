/**
 * Order ids: UUIDs (PostgreSQL's uuid column, the API's format) that carry their product's
 * catalogue number, so an order is found from its id alone: the first 32 bits are the number, the
 * version nibble is 8 (RFC 9562's custom layout), the other 90 bits are random. Ids minted before
 * (random v4 UUIDs, still in PostgreSQL and in outboxes) carry none: {@link orderProductNumber}
 * says so, and their lookups fall back to PostgreSQL and a bounded search.
 */
import { randomBytes, randomUUID } from 'node:crypto';

/** Largest catalogue number an id can carry. */
export const MAX_CATALOGUE_NUMBER = 0xffff_ffff;

/** A new order id for a product with catalogue number `n` (0: none known yet, a v4 UUID). */
export function mintOrderId(catalogueNumber: number): string {
  if (
    !Number.isInteger(catalogueNumber) ||
    catalogueNumber <= 0 ||
    catalogueNumber > MAX_CATALOGUE_NUMBER
  )
    return randomUUID();
  const b = randomBytes(16);
  b.writeUInt32BE(catalogueNumber, 0);
  b[6] = (b[6]! & 0x0f) | 0x80; // version 8
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const V8 = /^([0-9a-f]{8})-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The catalogue number an order id carries; undefined for an id of the older format. */
export function orderProductNumber(orderId: string): number | undefined {
  const m = V8.exec(orderId);
  if (!m) return undefined;
  const n = parseInt(m[1]!, 16);
  return n > 0 ? n : undefined;
}
