/**
 * Order ids: UUIDs (PostgreSQL's uuid column, the API's format) that carry their product's
 * catalogue number, so an order is found from its id alone, and the second they were minted in,
 * so a product's ids ascend: RFC 9562's custom layout (version nibble 8), the first 32 bits the
 * number, the next 28 (around the version nibble) the seconds since {@link ID_EPOCH_MS} (wrapping
 * after 8.5 years), the other 62 random. Every index keyed by an order id (the orders' primary
 * key and idempotency key, the events' order and version, the orders of a product) then takes a
 * sale's inserts at its end, on a few pages, not on a random page each: with random ids the
 * PostgreSQL CPU of an inserted order grew with the table (54 us at 100 000 rows, 75 at 600 000),
 * with ascending ones it stays at ~41. The random 62 bits keep ids unique (lookups check the
 * buyer: an id is a name, not a secret). Ids minted before (random v4 UUIDs, still in PostgreSQL
 * and in outboxes) carry no number: {@link orderProductNumber} says so, and their lookups fall
 * back to PostgreSQL and a bounded search.
 */
import { randomUUID } from 'node:crypto';

/** Largest catalogue number an id can carry. */
export const MAX_CATALOGUE_NUMBER = 0xffff_ffff;

/** Where an id's seconds count from. */
export const ID_EPOCH_MS = Date.UTC(2026, 0, 1);
const SECONDS = 2 ** 28;

/**
 * A new order id for a product with catalogue number `catalogueNumber` (0: none known yet, a v4
 * UUID). Made from a v4 UUID (Node draws those from a pooled random buffer; a randomBytes call per
 * id was 5 % of the API's CPU per sale): its first 32 bits become the number, the next 28 the
 * second (`nowMs`), its version nibble 8; its variant bits are already RFC 9562's.
 */
export function mintOrderId(catalogueNumber: number, nowMs = Date.now()): string {
  const uuid = randomUUID();
  if (
    !Number.isInteger(catalogueNumber) ||
    catalogueNumber <= 0 ||
    catalogueNumber > MAX_CATALOGUE_NUMBER
  )
    return uuid;
  const second = Math.floor((nowMs - ID_EPOCH_MS) / 1_000) % SECONDS;
  const time = ((second + SECONDS) % SECONDS).toString(16).padStart(7, '0');
  const number = catalogueNumber.toString(16).padStart(8, '0');
  return `${number}-${time.slice(0, 4)}-8${time.slice(4)}${uuid.slice(18)}`;
}

const V8 = /^([0-9a-f]{8})-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The catalogue number an order id carries; undefined for an id of the older format. */
export function orderProductNumber(orderId: string): number | undefined {
  const m = V8.exec(orderId);
  if (!m) return undefined;
  const n = parseInt(m[1]!, 16);
  return n > 0 ? n : undefined;
}
