/**
 * The checkout use case: one purchase, deducted in Redis and handed on for persistence, as one
 * step. Every entry point (the HTTP route, the benchmarks, the tests) buys through it, so no
 * caller can sell without submitting the order (the outbox would still hold it, and the sweeper
 * would persist it, but only after SWEEP_MIN_AGE_MS).
 */
import type { Purchase, PurchaseRequest, Sale, SaleError } from '../inventory/index.js';

/** Where a sold order goes next (the batching order submitter). */
export interface OrderSink {
  add(order: Purchase): void;
}

export class Checkout {
  constructor(
    private readonly sale: Sale,
    private readonly orders: OrderSink,
  ) {}

  /** A refusal known without asking Redis (sold out), or undefined: then {@link buy}. */
  refusalFromMemory(productId: string): SaleError | undefined {
    return this.sale.refusalFromMemory(productId);
  }

  /**
   * Sells and submits.
   * @throws SaleError for every refusal; a Redis error passes through (the deduct may have run).
   */
  async buy(req: PurchaseRequest): Promise<Purchase> {
    const p = await this.sale.purchase(req);
    this.orders.add(p);
    return p;
  }
}
