/**
 * Paying and cancelling orders of a sale with a payment window, for the buyer's routes and the
 * payment provider's webhook. PostgreSQL's conditional transition is the one arbiter
 * (orders/lifecycle.ts); an order still only in its outbox is persisted here first, so a buyer
 * may pay the moment the purchase answers.
 */
import type { OrderRow } from '../db/schema.js';
import {
  closeOrder,
  findOrder,
  insertOrders,
  payOrder,
  type LifecycleDeps,
} from '../orders/index.js';
import { rowView, type OrderLookup, type OrderView } from './orders.js';

export type PaymentOutcome =
  | { code: 'ok'; order: OrderView; replayed: boolean }
  | { code: 'not-found' }
  /** the order is not awaiting payment: `state` says what it is instead */
  | { code: 'conflict'; state: ConflictState; order: OrderView }
  /** the payment id settled another order */
  | { code: 'payment-used' }
  /** a spill claim is still taking the order's units: ask again in a moment */
  | { code: 'settling' };

export type ConflictState = 'paid' | 'cancelled' | 'expired' | 'final' | 'window-closed';

function conflictOf(row: OrderRow): PaymentOutcome {
  const state: ConflictState =
    row.status === 'awaiting_payment' ? 'window-closed' : (row.status as ConflictState);
  return { code: 'conflict', state, order: rowView(row) };
}

export class Payments {
  constructor(
    private readonly deps: LifecycleDeps,
    private readonly lookup: Pick<OrderLookup, 'pendingSale'>,
  ) {}

  /**
   * Marks the order paid by `paymentId`. `userId`: the buyer's route (anyone else's order does
   * not exist); none: the payment provider (verified by its signature).
   */
  async pay(orderId: string, paymentId: string, userId?: string): Promise<PaymentOutcome> {
    const held = await this.persistPending(orderId, userId);
    if (held) return held;
    const r = await payOrder(this.deps, orderId, paymentId, userId);
    if (r.code === 'paid') return { code: 'ok', order: rowView(r.order), replayed: r.replayed };
    if (r.code === 'conflict') return conflictOf(r.order);
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
    userId: string | undefined,
  ): Promise<PaymentOutcome | undefined> {
    const persisted = async () => (await findOrder(this.deps.db, orderId)) !== undefined;
    if (await persisted()) return undefined;
    const sale = await this.lookup.pendingSale(orderId, userId);
    // The worker commits a row before it deletes the outbox entry: gone from the outbox means
    // persisted in between, or never sold.
    if (!sale) return (await persisted()) ? undefined : { code: 'not-found' };
    if ('settling' in sale) return { code: 'settling' };
    await insertOrders(this.deps.db, [sale]);
    return undefined;
  }
}
