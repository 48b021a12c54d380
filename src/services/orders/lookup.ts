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
import { payBy, type findOrder } from '../../orders/index.js';

/** An order row as the orders repository reads it. */
type OrderRow = NonNullable<Awaited<ReturnType<typeof findOrder>>>;

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

/**
 * `persisted`: a final sale's row. A sale with a payment window goes `pending` ->
 * `awaiting_payment` -> `paid` | `cancelled` | `expired`; `payBy` is its deadline.
 */
export type OrderStatus = 'pending' | 'persisted' | Exclude<OrderRow['status'], 'final'>;

export interface OrderView {
  orderId: string;
  status: OrderStatus;
  productId: string;
  userId: string;
  /** absent only while a spill claim is still settling */
  quantity?: number;
  deductedAt?: string;
  persistedAt?: string;
  /** sales with a payment window: the deadline (ISO) */
  payBy?: string;
  /** paid, cancelled or expired: when */
  closedAt?: string;
  /** cancelled or expired: when its units were back on sale */
  restockedAt?: string;
  /** a priced sale's unit price when it was sold, and the order's total */
  price?: Price;
  total?: Price;
  /** persisted: 1, then +1 by each change of state (the order events' orderversion) */
  version?: number;
  /** persisted: its last change of state */
  updatedAt?: string;
}

/** Who asks: a shopper (by id) or an admin. */
export type OrderReader = { userId: string } | { admin: true };

/** The unit price and the total of `quantity` units at it. */
const priced = (price: Price | undefined, quantity: number) =>
  price && { price, total: { amount: price.amount * quantity, currency: price.currency } };

export const pendingView = (order: SoldOrder, price?: Price): OrderView => {
  const deadline = payBy(order);
  return {
    orderId: order.orderId,
    status: 'pending',
    productId: order.productId,
    userId: order.userId,
    quantity: order.quantity,
    deductedAt: new Date(order.deductedAt).toISOString(),
    ...(deadline && { payBy: deadline.toISOString() }),
    ...priced(price, order.quantity),
  };
};

/** The price a row copied when it was inserted; undefined when its sale was unpriced. */
export const rowPrice = (row: OrderRow): Price | undefined =>
  row.unit_amount === null || row.currency === null
    ? undefined
    : { amount: Number(row.unit_amount), currency: row.currency };

export const rowView = (row: OrderRow): OrderView => ({
  orderId: row.id,
  status: row.status === 'final' ? 'persisted' : row.status,
  productId: row.product_id,
  userId: row.user_id,
  quantity: row.quantity,
  deductedAt: row.deducted_at.toISOString(),
  persistedAt: row.persisted_at.toISOString(),
  ...(row.pay_by && { payBy: row.pay_by.toISOString() }),
  ...(row.closed_at && { closedAt: row.closed_at.toISOString() }),
  ...(row.restocked_at && { restockedAt: row.restocked_at.toISOString() }),
  ...priced(rowPrice(row), row.quantity),
  version: row.version,
  updatedAt: row.updated_at.toISOString(),
});

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
