/**
 * The checkout use case: one purchase, deducted in Redis and handed on for persistence, as one
 * step. Every entry point (the HTTP route, the benchmarks, the tests) buys through it, so no
 * caller can sell without submitting the order (the outbox would still hold it, and the sweeper
 * would persist it, but only after SWEEP_MIN_AGE_MS). It also settles what became of a purchase
 * that ended without an answer.
 */
import {
  mintOrderId,
  type Catalogue,
  type OrderResolution,
  type Sale,
  type SalePlan,
  type SaleRefusal,
  type SaleReply,
  type SoldOrder,
} from '../../inventory/index.js';

/** Where a sold order goes next (the batching order submitter). */
export interface OrderSink {
  add(order: SoldOrder): void;
}

/** Settles a purchase that got no answer at the buyer's home segment (inventory's PendingOrderStore). */
export interface OrdersAtHome {
  /** sold, pending, or voided (refused for `voidTtlSeconds`); null: no such product */
  resolveAtHome(
    productId: string,
    userId: string,
    orderId: string,
    voidTtlSeconds: number,
  ): Promise<OrderResolution | null>;
}

/** sold | pending (a spill still settling) | not-sold (and it cannot sell late any more) */
export type Resolution = 'sold' | 'pending' | 'not-sold';

export interface CheckoutDeps {
  sale: Sale;
  /** the product views: an order id carries its product's catalogue number */
  catalogue: Pick<Catalogue, 'get' | 'known'>;
  orders: OrderSink;
  ordersAtHome: OrdersAtHome;
  /** whether an order row exists (an order of an earlier epoch, no longer in any marker) */
  orderPersisted: (orderId: string) => Promise<boolean>;
  /** how long a given-up order id stays refused */
  voidTtlSeconds: number;
}

export class Checkout {
  constructor(private readonly deps: CheckoutDeps) {}

  /** A refusal known without asking Redis (sold out), or undefined: then {@link buy}. */
  refusalFromMemory(productId: string): SaleRefusal | undefined {
    return this.deps.sale.refusalFromMemory(productId);
  }

  /**
   * Learns what the guard needs of a product this process never saw (a process started after the
   * sell-out or the end), so it answers here as anywhere. Undefined: nothing to wait for.
   * Rejects with the store's error when the product cannot be read.
   */
  learn(productId: string): Promise<void> | undefined {
    return this.deps.sale.guard.learn(productId);
  }

  /**
   * Whether this process knows the purchase would be refused (sold out, outside the window): no
   * metric, nothing is answered from it; a keyed purchase then skips tokens and limits.
   */
  knownRefusal(productId: string): boolean {
    return this.deps.sale.guard.knows(productId);
  }

  /**
   * A new order id for a purchase of `productId`: it carries the product's catalogue number, so the
   * order is found from its id alone. Unknown product (or its view unreadable): a plain UUID.
   */
  newOrderId(productId: string): string | Promise<string> {
    const mint = (view: { number: number } | null) => mintOrderId(view?.number ?? 0);
    try {
      const got = this.deps.catalogue.get(productId);
      return got instanceof Promise ? got.then(mint, () => mint(null)) : mint(got);
    } catch {
      return mint(null);
    }
  }

  /**
   * Sells the plan and submits what it sold. A `failed` reply may have sold: never simply run it
   * again, resolve it ({@link resolve}).
   */
  async buy(plan: SalePlan): Promise<SaleReply> {
    const r = await this.deps.sale.purchase(plan);
    if (r.kind === 'sold') this.deps.orders.add(r.order);
    return r;
  }

  /**
   * What became of `orderId`, bought by `userId`, whose purchase ended without an answer. A
   * 'not-sold' answer is final: the order id is marked given up, so a deduct of it that arrives
   * late is refused. (A sold order that no submitter took is persisted by the sweeper.)
   */
  async resolve(productId: string, userId: string, orderId: string): Promise<Resolution> {
    const r = await this.deps.ordersAtHome.resolveAtHome(
      productId,
      userId,
      orderId,
      this.deps.voidTtlSeconds,
    );
    if (r === 'sold' || r === 'pending') return r;
    // not in this epoch's marker: an order of an earlier epoch would have its row by now
    return (await this.deps.orderPersisted(orderId)) ? 'sold' : 'not-sold';
  }
}
