/**
 * The order as every consumer sees it, one codec: GET /orders/:id, the admin listing, the
 * export (NDJSON and CSV) and the services' answers render a row with {@link rowView}. The order
 * events' `data` is written by PostgreSQL's `order_event_data` (a trigger renders it in the
 * change's own statement, the order at that version): test/orders/order-codec.test.ts holds
 * the two equal, field by field (docs/decisions.md says why two writers and a test, not one).
 */
import type { Price, SoldOrder } from '../../inventory/index.js';
import { payBy, type OrderRow } from '../../orders/index.js';

/**
 * `persisted`: a final sale's row. A sale with a payment window goes `pending` ->
 * `awaiting_payment` -> `paid` | `cancelled` | `expired`; `payBy` is its deadline. A paid order
 * may be `refunded`, or `disputed` -> `paid` (won) | `dispute_lost`.
 */
export type OrderStatus = 'pending' | 'persisted' | Exclude<OrderRow['status'], 'final'>;

/** Each status a persisted order is listed by (GET /admin/orders, the export) -> its row's. */
export const ROW_STATUS = {
  persisted: 'final',
  awaiting_payment: 'awaiting_payment',
  paid: 'paid',
  cancelled: 'cancelled',
  expired: 'expired',
  refunded: 'refunded',
  disputed: 'disputed',
  dispute_lost: 'dispute_lost',
} as const satisfies Record<string, OrderRow['status']>;

export interface OrderView {
  orderId: string;
  status: OrderStatus;
  productId: string;
  /** the sale epoch it was sold in (absent only while a spill claim is still settling) */
  epoch?: number;
  userId: string;
  /** absent only while a spill claim is still settling */
  quantity?: number;
  deductedAt?: string;
  persistedAt?: string;
  /** sales with a payment window: the deadline (ISO) */
  payBy?: string;
  /** paid: the provider's id of the payment (what finance matches payouts by) */
  paymentId?: string;
  /** paid, cancelled or expired: when */
  closedAt?: string;
  /** cancelled, expired or refunded (while its sale ran): when its units were back on sale */
  restockedAt?: string;
  /** refunded: when */
  refundedAt?: string;
  /** a dispute of its payment: when it was opened, and when it was won or lost */
  disputedAt?: string;
  disputeClosedAt?: string;
  /** a priced sale's unit price when it was sold, and the order's total */
  price?: Price;
  total?: Price;
  /** persisted: 1, then +1 by each change of state (the order events' orderversion) */
  version?: number;
  /** persisted: its last change of state */
  updatedAt?: string;
  /** bought with a draw's purchase right: the entry (the transcript's id) and its rank (1 first) */
  entryId?: string;
  rank?: number;
}

/** The unit price and the total of `quantity` units at it. */
const priced = (price: Price | undefined, quantity: number) =>
  price && { price, total: { amount: price.amount * quantity, currency: price.currency } };

export const pendingView = (order: SoldOrder, price?: Price): OrderView => {
  const deadline = payBy(order);
  return {
    orderId: order.orderId,
    status: 'pending',
    productId: order.productId,
    epoch: order.epoch,
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
  epoch: row.epoch,
  userId: row.user_id,
  quantity: row.quantity,
  deductedAt: row.deducted_at.toISOString(),
  persistedAt: row.persisted_at.toISOString(),
  ...(row.pay_by && { payBy: row.pay_by.toISOString() }),
  ...(row.payment_id !== null && { paymentId: row.payment_id }),
  ...(row.closed_at && { closedAt: row.closed_at.toISOString() }),
  ...(row.restocked_at && { restockedAt: row.restocked_at.toISOString() }),
  ...(row.refunded_at && { refundedAt: row.refunded_at.toISOString() }),
  ...(row.disputed_at && { disputedAt: row.disputed_at.toISOString() }),
  ...(row.dispute_closed_at && { disputeClosedAt: row.dispute_closed_at.toISOString() }),
  ...priced(rowPrice(row), row.quantity),
  version: row.version,
  updatedAt: row.updated_at.toISOString(),
  ...(row.draw_entry_id !== null && { entryId: row.draw_entry_id }),
  ...(row.draw_rank !== null && { rank: row.draw_rank }),
});
