/**
 * Paying and cancelling orders of a sale with a payment window. The buyer STARTS a payment (a
 * payment intent bound to the order, orders/payment-intents-repository.ts) and may cancel; only the payment
 * provider's verified payment notice settles an intent, which marks its order paid. PostgreSQL's
 * conditional transition is the one arbiter (orders/payment-window.ts); an order still only in its
 * outbox is persisted here first, so a buyer may start paying the moment the purchase answers.
 */
import type { SoldOrder } from '../../inventory/index.js';
import {
  closeOrder,
  payOrder,
  type NoticeAnswer,
  type NoticeKey,
  type OrderRow,
  type PaymentIntentRow,
  type PaymentWindowDeps,
  type AfterPaidRows,
  type PaymentWindowRows,
  type Settlement,
  type StartOutcome,
} from '../../orders/index.js';
import type { OrderLookup } from './lookup.js';
import { rowView, type OrderView } from './order-view.js';

export type PaymentOutcome =
  | { code: 'ok'; order: OrderView; replayed: boolean }
  | { code: 'not-found' }
  /** the order is not awaiting payment: `state` says what it is instead */
  | { code: 'conflict'; state: ConflictState; order: OrderView }
  /** the provider's payment id settled another order */
  | { code: 'payment-used' }
  /** the notice names an intent that does not exist or is bound to another order */
  | { code: 'unknown-intent' }
  /** a spill claim is still taking the order's units: ask again in a moment */
  | { code: 'settling' }
  /** the notice pays another amount or currency than the order's total: nothing paid */
  | { code: 'amount-mismatch'; order: OrderView; paid: { amount?: number; currency?: string } };

export type ConflictState =
  | 'paid'
  | 'cancelled'
  | 'expired'
  | 'final'
  | 'window-closed'
  | 'refunded'
  | 'disputed'
  | 'dispute_lost';

/** What the buyer hands the payment provider: the provider charges it and names it back. */
export interface IntentView {
  paymentIntentId: string;
  orderId: string;
  /** units to pay for */
  quantity: number;
  /** the order's payBy: the provider must not charge it later */
  expiresAt: string;
  status: 'requires_payment';
  /** a priced order's total (minor units) and currency: what the provider must charge */
  amount?: number;
  currency?: string;
}

export type StartPaymentOutcome =
  | { code: 'started'; intent: IntentView; created: boolean }
  | Extract<PaymentOutcome, { code: 'not-found' | 'conflict' | 'settling' }>;

const intentView = (intent: PaymentIntentRow): IntentView => ({
  paymentIntentId: intent.id,
  orderId: intent.order_id,
  quantity: intent.quantity,
  expiresAt: intent.expires_at.toISOString(),
  status: 'requires_payment',
  ...(intent.amount !== null && { amount: Number(intent.amount), currency: intent.currency! }),
});

export function conflictOf(row: OrderRow): Extract<PaymentOutcome, { code: 'conflict' }> {
  const state: ConflictState =
    row.status === 'awaiting_payment' ? 'window-closed' : (row.status as ConflictState);
  return { code: 'conflict', state, order: rowView(row) };
}

/** The SQL payments need beyond the window's (orders' PaymentRepository). */
export interface PaymentRecords extends PaymentWindowRows, AfterPaidRows {
  startIntent(orderId: string, userId: string): Promise<StartOutcome>;
  /** the intent the order's buyer started, if any */
  intentOfOrder(orderId: string): Promise<{ id: string } | undefined>;
  insertOrders(orders: readonly SoldOrder[]): Promise<number>;
  /** runs `handle` once per payment notice, in a transaction (`tx`: the rows inside it) */
  noticeOnce(
    notice: NoticeKey,
    handle: (tx: PaymentRecords) => Promise<NoticeAnswer>,
  ): Promise<NoticeAnswer & { replayed: boolean }>;
}

export class Payments {
  constructor(
    private readonly deps: PaymentWindowDeps & { rows: PaymentRecords },
    private readonly lookup: Pick<OrderLookup, 'pendingSale'>,
  ) {}

  /**
   * The buyer starts paying their order: its payment intent, the same one every time. Marks
   * nothing paid. Anyone else's order does not exist.
   */
  async start(orderId: string, userId: string): Promise<StartPaymentOutcome> {
    const held = await this.persistPending(orderId, userId);
    if (held) return held;
    const r = await this.deps.rows.startIntent(orderId, userId);
    if (r.code === 'started') {
      return { code: 'started', intent: intentView(r.intent), created: r.created };
    }
    return r.code === 'conflict' ? conflictOf(r.order) : r;
  }

  /**
   * The provider's verified notice that an intent was paid: marks its order paid (the arbiter
   * against expiry and cancel). `rows`: a transaction's to run in (the notice's, which records its answer).
   */
  async settle(
    settlement: Settlement,
    rows: PaymentWindowRows = this.deps.rows,
  ): Promise<PaymentOutcome> {
    const r = await payOrder({ rows }, settlement);
    if (r.code === 'paid') return { code: 'ok', order: rowView(r.order), replayed: r.replayed };
    if (r.code === 'conflict') return conflictOf(r.order);
    if (r.code === 'amount-mismatch') {
      const paid = {
        ...(settlement.amount !== undefined && { amount: settlement.amount }),
        ...(settlement.currency !== undefined && { currency: settlement.currency }),
      };
      return { code: 'amount-mismatch', order: rowView(r.order), paid };
    }
    return r;
  }

  /** The buyer cancels before paying; cancelling a cancelled order answers it again. */
  async cancel(orderId: string, userId: string): Promise<PaymentOutcome> {
    const held = await this.persistPending(orderId, userId);
    if (held) return held;
    const r = await closeOrder(this.deps, orderId, 'cancelled', userId);
    if (r.code === 'closed') return { code: 'ok', order: rowView(r.order), replayed: false };
    if (r.code === 'not-found') return r;
    if (r.order.status === 'cancelled') {
      return { code: 'ok', order: rowView(r.order), replayed: true };
    }
    return conflictOf(r.order);
  }

  /**
   * Writes the order's row if it is still only in an outbox (the worker's insert of it later
   * adds nothing). Answers instead of the transition only while a spill claim is settling.
   */
  private async persistPending(
    orderId: string,
    userId: string,
  ): Promise<Extract<PaymentOutcome, { code: 'not-found' | 'settling' }> | undefined> {
    const persisted = async () => (await this.deps.rows.findOrder(orderId)) !== undefined;
    if (await persisted()) return undefined;
    const sale = await this.lookup.pendingSale(orderId, userId);
    // The worker commits a row before it deletes the outbox entry: gone from the outbox means
    // persisted in between, or never sold.
    if (!sale) return (await persisted()) ? undefined : { code: 'not-found' };
    if ('settling' in sale) return { code: 'settling' };
    await this.deps.rows.insertOrders([sale]);
    return undefined;
  }
}
