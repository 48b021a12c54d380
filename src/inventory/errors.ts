/**
 * Every way a purchase or a seed can be refused, named once, and the one function that maps them
 * to HTTP problems (so the API, the CLI and the load tests all see the same words).
 */
import { ProblemError } from '../errors.js';

export type SaleErrorCode =
  | 'unknown-product'
  | 'sold-out'
  | 'insufficient-stock'
  | 'limit-reached'
  | 'purchase-in-progress'
  | 'not-started'
  | 'ended'
  | 'lock-timeout'
  | 'reseeding'
  | 'sale-live';

export class SaleError extends Error {
  readonly code: SaleErrorCode;
  /** The shopper's earlier order (limit-reached, purchase-in-progress). */
  readonly orderId: string | undefined;
  /** ms since the epoch (not-started: startsAt; ended: endsAt). */
  readonly at: number | undefined;

  constructor(o: { code: SaleErrorCode; message: string; orderId?: string; at?: number }) {
    super(o.message);
    this.name = 'SaleError';
    this.code = o.code;
    this.orderId = o.orderId;
    this.at = o.at;
  }
}

const HTTP: Record<SaleErrorCode, { status: number; title: string }> = {
  'unknown-product': { status: 404, title: 'Unknown product' },
  'sold-out': { status: 409, title: 'Sold out' },
  'insufficient-stock': { status: 409, title: 'Not enough stock for this quantity' },
  'limit-reached': { status: 409, title: 'Purchase limit reached' },
  'purchase-in-progress': { status: 409, title: 'Another purchase of yours is in progress' },
  'not-started': { status: 425, title: 'Sale not started' },
  ended: { status: 410, title: 'Sale ended' },
  'lock-timeout': { status: 503, title: 'Too busy, try again' },
  reseeding: { status: 503, title: 'Sale is being reseeded, try again' },
  'sale-live': { status: 409, title: 'Sale is live' },
};

/** Seconds a client should wait before retrying a 503. */
const RETRY_AFTER_SECONDS = '1';

/** The 404 every product route answers for a product that was never seeded. */
export function unknownProduct(productId: string): SaleError {
  return new SaleError({ code: 'unknown-product', message: `no product "${productId}"` });
}

export function saleProblem(err: SaleError): ProblemError {
  const { status, title } = HTTP[err.code];
  return new ProblemError({
    status,
    code: err.code,
    title,
    detail: err.message,
    cause: err,
    ...(status === 503 && { headers: { 'Retry-After': RETRY_AFTER_SECONDS } }),
    extensions: {
      ...(err.orderId && { orderId: err.orderId }),
      ...(err.at !== undefined && {
        [err.code === 'not-started' ? 'startsAt' : 'endsAt']: new Date(err.at).toISOString(),
      }),
    },
  });
}
