/**
 * An `Idempotency-Key` record as Redis holds it (src/inventory/idempotency/idempotency-store.ts keeps them):
 * JSON, written and read only here. The scripts never parse it: lua/idempotencyClaim-3.lua and
 * lua/deductKeyed-10.lua write the values encoded here, as they are.
 */

/** An answer as the client got it, replayed byte for byte. */
export interface StoredResponse {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
  /** the problem code of an error answer (for the metrics; the body says it to the client) */
  problem?: string;
}

/** What Redis holds under an idempotency key (JSON; this module is its only encoder and decoder). */
export interface IdempotencyRecord {
  /** fingerprint of the request (parsed, defaults applied) */
  fp: string;
  /** the order the request sells under */
  orderId?: string;
  productId?: string;
  quantity?: number;
  /** while running: local time (ms) until which the request is presumed alive */
  leaseUntil?: number;
  /** the purchase ended without knowing whether it sold */
  unknown?: true;
  /** the final answer, once there is one */
  done?: StoredResponse;
}

/**
 * As stored: short names, and once answered only what the replay needs (the fingerprint and the
 * answer, its content type left out when it is the usual one for its status).
 */
interface StoredRecord {
  f: string;
  o?: string;
  p?: string;
  q?: number;
  l?: number;
  u?: 1;
  /** status, body, content type (unless the usual), headers (if any) */
  d?: { s: number; b: string; c?: string; h?: Record<string, string> };
}

const usualType = (status: number) =>
  status >= 400 ? 'application/problem+json' : 'application/json';

export function encodeIdempotencyRecord(record: IdempotencyRecord): string {
  if (record.done) {
    const { status, body, contentType, headers } = record.done;
    const d: StoredRecord['d'] = { s: status, b: body };
    if (contentType !== usualType(status)) d.c = contentType;
    if (headers && Object.keys(headers).length) d.h = headers;
    return JSON.stringify({ f: record.fp, d } satisfies StoredRecord);
  }
  const stored: StoredRecord = {
    f: record.fp,
    o: record.orderId,
    p: record.productId,
    q: record.quantity,
  };
  if (record.leaseUntil !== undefined) stored.l = record.leaseUntil;
  if (record.unknown) stored.u = 1;
  return JSON.stringify(stored);
}

export function decodeIdempotencyRecord(raw: string): IdempotencyRecord {
  const v = JSON.parse(raw) as StoredRecord & IdempotencyRecord;
  if (typeof v?.fp === 'string') return v; // written before the compact form
  if (typeof v?.f !== 'string') throw new Error('not an idempotency record');
  const r: IdempotencyRecord = { fp: v.f };
  if (v.o !== undefined) r.orderId = v.o;
  if (v.p !== undefined) r.productId = v.p;
  if (v.q !== undefined) r.quantity = v.q;
  if (v.l !== undefined) r.leaseUntil = v.l;
  if (v.u) r.unknown = true;
  if (v.d) {
    r.done = { status: v.d.s, contentType: v.d.c ?? usualType(v.d.s), body: v.d.b };
    if (v.d.h) r.done.headers = v.d.h;
  }
  return r;
}
