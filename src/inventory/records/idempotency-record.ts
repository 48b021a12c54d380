/**
 * An `Idempotency-Key` record as Redis holds it (src/inventory/idempotency/idempotency-store.ts
 * keeps them): JSON, written and read only here. The scripts never parse it:
 * lua/idempotencyClaim-3.lua and lua/deductKeyed-10.lua write the values encoded here, as they are.
 *
 * A record's final answer is kept as what it means (a sale, or a refusal and the request it
 * answered), which the HTTP edge renders, the same bytes at every replay. Records written before
 * kept the answer's bytes (`d`): those are replayed as they are.
 */
import type { SaleErrorCode, SaleRefusal } from '../errors.js';

/** An answer as the client got it (records written before answers were kept by meaning). */
export interface StoredResponse {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

/** A keyed purchase's final answer, replayed to a retry with its key. */
export type PurchaseAnswer =
  /** sold under `orderId` */
  | { kind: 'sold'; orderId: string; productId: string; quantity: number }
  /** a sale refusal; `request` the request it first answered, which a replay names too */
  | { kind: 'refused'; refusal: SaleRefusal; request?: { id: string; url: string } | undefined }
  /** an answer kept by its bytes (records written before): `sold` when it was a sale's */
  | { kind: 'sent'; response: StoredResponse; sold: boolean };

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
  done?: PurchaseAnswer;
}

/**
 * As stored: short names, and once answered only what the replay needs. A sale keeps its order
 * (`o`, `p`, `q`) and `s`; a refusal `r` and the request it answered (`i`, `w`), and a lease
 * that never runs out (`l`), so that a process of a version that knows only `d` answers it as
 * in progress rather than running the purchase again.
 */
interface StoredRecord {
  f: string;
  o?: string;
  p?: string;
  q?: number;
  l?: number;
  u?: 1;
  /** sold: the answer is the sale of `o` */
  s?: 1;
  /** refused: code, message, the order it names, the time it names (ms) */
  r?: { c: SaleErrorCode; m: string; o?: string; t?: number };
  /** the id and URL of the request a refusal answered */
  i?: string;
  w?: string;
  /** an answer's bytes: status, body, content type (unless the usual), headers (if any) */
  d?: { s: number; b: string; c?: string; h?: Record<string, string> };
}

/** The answer of a record written before the compact form: `fp`, and `done` as the bytes. */
type OldestRecord = Omit<IdempotencyRecord, 'done'> & { done?: StoredResponse };

const usualType = (status: number) =>
  status >= 400 ? 'application/problem+json' : 'application/json';

/** The lease a refusal's record carries for a reader that knows only `d` (see StoredRecord). */
const NEVER = Number.MAX_SAFE_INTEGER;

function encodeAnswer(fp: string, answer: PurchaseAnswer): StoredRecord {
  switch (answer.kind) {
    case 'sold':
      return { f: fp, o: answer.orderId, p: answer.productId, q: answer.quantity, s: 1 };
    case 'refused': {
      const { code, message, orderId, at } = answer.refusal;
      const r: NonNullable<StoredRecord['r']> = { c: code, m: message };
      if (orderId !== undefined) r.o = orderId;
      if (at !== undefined) r.t = at;
      const stored: StoredRecord = { f: fp, r, l: NEVER };
      if (answer.request) {
        stored.i = answer.request.id;
        stored.w = answer.request.url;
      }
      return stored;
    }
    case 'sent': {
      const { status, body, contentType, headers } = answer.response;
      const d: StoredRecord['d'] = { s: status, b: body };
      if (contentType !== usualType(status)) d.c = contentType;
      if (headers && Object.keys(headers).length) d.h = headers;
      return { f: fp, d };
    }
  }
}

export function encodeIdempotencyRecord(record: IdempotencyRecord): string {
  if (record.done) return JSON.stringify(encodeAnswer(record.fp, record.done));
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

const sent = (response: StoredResponse): PurchaseAnswer => ({
  kind: 'sent',
  response,
  sold: response.status === 202,
});

export function decodeIdempotencyRecord(raw: string): IdempotencyRecord {
  const v = JSON.parse(raw) as StoredRecord & OldestRecord;
  if (typeof v?.fp === 'string') {
    // written before the compact form
    const { done, ...rest } = v;
    return done ? { ...rest, done: sent(done) } : rest;
  }
  if (typeof v?.f !== 'string') throw new Error('not an idempotency record');
  const r: IdempotencyRecord = { fp: v.f };
  if (v.s) {
    r.done = { kind: 'sold', orderId: v.o!, productId: v.p!, quantity: v.q! };
    return r;
  }
  if (v.r) {
    const refusal: SaleRefusal = {
      code: v.r.c,
      message: v.r.m,
      ...(v.r.o !== undefined && { orderId: v.r.o }),
      ...(v.r.t !== undefined && { at: v.r.t }),
    };
    const request = v.i === undefined ? undefined : { id: v.i, url: v.w ?? '' };
    r.done = { kind: 'refused', refusal, request };
    return r;
  }
  if (v.o !== undefined) r.orderId = v.o;
  if (v.p !== undefined) r.productId = v.p;
  if (v.q !== undefined) r.quantity = v.q;
  if (v.l !== undefined) r.leaseUntil = v.l;
  if (v.u) r.unknown = true;
  if (v.d) {
    const response: StoredResponse = {
      status: v.d.s,
      contentType: v.d.c ?? usualType(v.d.s),
      body: v.d.b,
    };
    if (v.d.h) response.headers = v.d.h;
    r.done = sent(response);
  }
  return r;
}
