/**
 * Every way a purchase or a seed can be refused, named once (the HTTP layer maps each code to a
 * status in one table, so the API, the CLI and the load tests all see the same words).
 */
import { QuietError } from '../errors.js';

export type SaleErrorCode =
  | 'unknown-product'
  | 'sold-out'
  | 'insufficient-stock'
  | 'limit-reached'
  | 'purchase-in-progress'
  | 'not-started'
  /** an operator paused the sale: nothing sells until it is resumed */
  | 'sale-paused'
  | 'ended'
  | 'lock-timeout'
  | 'reseeding'
  | 'sale-live'
  /** a reseed would throw a waiting room's line away, and the request did not say so */
  | 'line-discarded'
  | 'order-voided'
  /** a Redis Cluster shard holding the segment failed a moment ago (nothing was sold) */
  | 'shard-unavailable';

/**
 * A refusal as a value: what a purchase (or the guard before it) comes to instead of a sale. Plain
 * data, returned and stored (an Idempotency-Key's record keeps it), never thrown.
 */
export interface SaleRefusal {
  readonly code: SaleErrorCode;
  readonly message: string;
  /** The shopper's earlier order (limit-reached, purchase-in-progress). */
  readonly orderId?: string | undefined;
  /** ms since the epoch (not-started: startsAt; ended: endsAt). */
  readonly at?: number | undefined;
}

/** A refusal thrown, where a change cannot go on (a reseed of a live sale: `sale-live`, ...). */
export class SaleError extends QuietError implements SaleRefusal {
  readonly code: SaleErrorCode;
  readonly orderId: string | undefined;
  readonly at: number | undefined;

  constructor(init: SaleRefusal) {
    super(init.message);
    this.name = 'SaleError';
    this.code = init.code;
    this.orderId = init.orderId;
    this.at = init.at;
  }
}

/** The refusal every product route answers for a product that was never seeded. */
export function unknownProduct(productId: string): SaleRefusal {
  return { code: 'unknown-product', message: `no product "${productId}"` };
}
