/** The HTTP answer of each sale refusal: one table, used by every route that sells or seeds. */
import { ProblemError } from '../errors.js';
import type { SaleErrorCode, SaleRefusal } from '../inventory/index.js';

const HTTP: Record<SaleErrorCode, { status: number; title: string }> = {
  'unknown-product': { status: 404, title: 'Unknown product' },
  'sold-out': { status: 409, title: 'Sold out' },
  'insufficient-stock': { status: 409, title: 'Not enough stock for this quantity' },
  'limit-reached': { status: 409, title: 'Purchase limit reached' },
  'purchase-in-progress': { status: 409, title: 'Another purchase of yours is in progress' },
  'not-started': { status: 425, title: 'Sale not started' },
  'sale-paused': { status: 503, title: 'Sale paused by the shop, try again' },
  ended: { status: 410, title: 'Sale ended' },
  'lock-timeout': { status: 503, title: 'Too busy, try again' },
  reseeding: { status: 503, title: 'Sale is being reseeded, try again' },
  'sale-live': { status: 409, title: 'Sale is live' },
  'line-discarded': { status: 409, title: 'A reseed would throw the waiting line away' },
  'order-voided': { status: 409, title: 'This order was given up' },
  'shard-unavailable': {
    status: 503,
    title: 'Part of the inventory store is unavailable, try again',
  },
};

/** Seconds a client should wait before retrying a 503 (a paused sale: longer, a person resumes it). */
const RETRY_AFTER_SECONDS = '1';
const PAUSED_RETRY_AFTER_SECONDS = '5';

/** The problem of each refusal already answered: a refusal made once (sold out) is answered often. */
const made = new WeakMap<SaleRefusal, ProblemError>();

export function saleProblem(err: SaleRefusal): ProblemError {
  let p = made.get(err);
  if (!p) made.set(err, (p = problemOf(err)));
  return p;
}

function problemOf(err: SaleRefusal): ProblemError {
  const { status, title } = HTTP[err.code];
  return new ProblemError({
    status,
    code: err.code,
    title,
    detail: err.code === 'sale-live' ? `${err.message}: add ?force=true` : err.message,
    cause: err,
    ...(status === 503 && {
      headers: {
        'Retry-After':
          err.code === 'sale-paused' ? PAUSED_RETRY_AFTER_SECONDS : RETRY_AFTER_SECONDS,
      },
    }),
    extensions: {
      ...(err.orderId && { orderId: err.orderId }),
      ...(err.at !== undefined && {
        [err.code === 'not-started' ? 'startsAt' : 'endsAt']: new Date(err.at).toISOString(),
      }),
    },
  });
}
