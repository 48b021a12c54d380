/**
 * Reading one order: pending (sold, still in an outbox, so only in Redis) or persisted (a row in
 * PostgreSQL). Redis is asked first, so a buyer (or an admin) learns of a pending order even
 * while PostgreSQL is away. Only the buyer or an admin may read an order; to anyone else it does
 * not exist.
 */
import {
  orderProductNumber,
  type PendingOrderRef,
  type Price,
  type SoldOrder,
} from '../../inventory/index.js';
import type { OrderRow } from '../../orders/index.js';
import { pendingView, rowView, type OrderView } from './order-view.js';

export type { OrderStatus, OrderView } from './order-view.js';

/** The Redis side: orders sold but not yet persisted (inventory's PendingOrderStore). */
export interface PendingOrderSource {
  /** the product whose marker (or open claim) of `userId` lists `orderId` */
  findPending(userId: string, orderId: string): Promise<PendingOrderRef | undefined>;
  /** the outbox entry of `orderId` in any segment of `productId` */
  inOutboxes(productId: string, orderId: string): Promise<SoldOrder | undefined>;
  /** the outbox entry of `orderId` in its product (the buyer unknown) */
  inAllOutboxes(orderId: string): Promise<SoldOrder | undefined>;
}

/** The SQL side: the order rows (the orders repository). */
export interface OrderRowSource {
  findOrder(orderId: string): Promise<OrderRow | undefined>;
  /** a sale epoch's price (what its orders copy as they are persisted) */
  salePrice(productId: string, epoch: number): Promise<Price | undefined>;
}

/** Who asks: a shopper (by id) or an admin. */
export type OrderReader = { userId: string } | { admin: true };

export class OrderLookup {
  constructor(private readonly deps: { pending: PendingOrderSource; rows: OrderRowSource }) {}

  /** The order as `reader` may see it; null when it does not exist or is not theirs. */
  async find(orderId: string, reader: OrderReader): Promise<OrderView | null> {
    const userId = 'userId' in reader ? reader.userId : undefined;
    const seenBy = (row: OrderRow) =>
      userId !== undefined && row.user_id !== userId ? null : rowView(row);
    if (orderProductNumber(orderId) === undefined) {
      // an id of the older format: Redis can only search for it in a bounded set of products,
      // and most such orders are persisted long since
      const row = await this.deps.rows.findOrder(orderId).catch(() => undefined);
      if (row) return seenBy(row);
    }
    const sale = await this.pendingSale(orderId, userId);
    if (sale && 'settling' in sale) {
      return { orderId, status: 'pending', productId: sale.settling, userId: userId! };
    }
    // A final sale in an outbox is pending; one with a payment window may have been paid or
    // cancelled already (those routes persist it first), so its row, if any, says more.
    if (sale && sale.payWithinSeconds === 0) return this.pendingView(sale);
    let row: OrderRow | undefined;
    try {
      row = await this.deps.rows.findOrder(orderId);
    } catch (err) {
      if (sale) return pendingView(sale);
      throw err;
    }
    if (!row) return sale ? this.pendingView(sale) : null;
    return seenBy(row);
  }

  /** A pending order with its sale's price; without it while PostgreSQL does not answer. */
  private async pendingView(sale: SoldOrder): Promise<OrderView> {
    const price = await this.deps.rows.salePrice(sale.productId, sale.epoch).catch(() => undefined);
    return pendingView(sale, price);
  }

  /**
   * The sale of an order while it is only in Redis (an outbox entry); `settling` (its product) for a spill
   * claim whose units are still being taken from another segment; null when Redis has none.
   */
  async pendingSale(
    orderId: string,
    userId: string | undefined,
  ): Promise<SoldOrder | { settling: string } | null> {
    const { pending } = this.deps;
    if (userId === undefined) return (await pending.inAllOutboxes(orderId)) ?? null;
    const ref = await pending.findPending(userId, orderId);
    if (!ref) return null;
    const order = await pending.inOutboxes(ref.productId, orderId);
    if (order) return order;
    return ref.claimOnly ? { settling: ref.productId } : null;
  }
}
