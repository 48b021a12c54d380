/**
 * Orders of a sale with a payment window: awaiting_payment -> paid | cancelled | expired. One
 * arbiter decides: PostgreSQL's conditional transition (`... WHERE status = 'awaiting_payment'`),
 * with the deadline on PostgreSQL's clock (pay only before pay_by, expire only from it on). Only
 * the winner of a cancel or an expiry returns the units, through lua/restock-3.lua, which
 * records the order so a retry (a job run twice, the sweep after a crash) returns them once; the
 * row's restocked_at says the return is done. A refunded order's units come back the same way,
 * while its sale runs (after-paid.ts); after the end they stay sold (units_kept_at).
 */
import type { Catalogue, ReturnedOrder } from '../inventory/index.js';
import type { Logger } from '../log.js';
import type { OrderRow } from './repository.js';

/** The SQL this module needs (payment-window-repository.ts). */
export interface PaymentWindowRows {
  markPaid(settlement: Settlement): Promise<OrderRow | 'payment-used' | undefined>;
  close(
    orderId: string,
    to: 'cancelled' | 'expired',
    userId?: string,
  ): Promise<OrderRow | undefined>;
  markRestocked(orderId: string): Promise<void>;
  /** a refund after its sale's end: its units stay sold */
  markKept(orderId: string): Promise<void>;
  overdueIds(graceMs: number, limit: number): Promise<string[]>;
  unreturned(graceMs: number, limit: number): Promise<OrderRow[]>;
  findOrder(id: string): Promise<OrderRow | undefined>;
  findIntent(id: string): Promise<{ order_id: string } | undefined>;
  pruneNotices(): Promise<number>;
  /** keeps a refused notice (once per payment, order and reason) */
  recordRefusal(refusal: PaymentRefusal): Promise<void>;
}

/**
 * A provider's notice the service refused: it changed nothing, and a person looks at it (a
 * payment to refund, a refund or a dispute the order could not take).
 */
export interface PaymentRefusal {
  orderId: string;
  paymentId: string;
  /** the answer's problem code: amount-mismatch, order-expired, partial-refund... */
  reason: string;
  /** what the notice says was paid (or refunded), and what the order's total is */
  paid?: { amount?: number | undefined; currency?: string | undefined } | undefined;
  expected?: { amount: number; currency: string } | undefined;
  /** who sent it and the provider's id of it (Stripe's evt_..., a webhook-id), if any */
  provider?: string | undefined;
  noticeId?: string | undefined;
  /** why, in words */
  detail?: string | undefined;
}

/** The Redis this module needs (inventory's OrderStore): a closed order's units go back. */
export interface UnitReturns {
  restock(order: ReturnedOrder): Promise<{ code: string }>;
  releaseMarker(order: ReturnedOrder): Promise<unknown>;
}

export interface PaymentWindowDeps {
  rows: PaymentWindowRows;
  units: UnitReturns;
  /** tells every API process the units are back (sold-out views cleared) */
  catalogue: Pick<Catalogue, 'announceRestock'>;
  /** the buyer-limit policy: a returned order no longer counts against its buyer's limit */
  returnFreesLimit: boolean;
  logger?: Logger | undefined;
}

/** The order's row; undefined when there is none, or it is not `userId`'s (when given). */
async function orderAsSeenBy(rows: PaymentWindowRows, orderId: string, userId?: string) {
  const row = await rows.findOrder(orderId);
  return row && (userId === undefined || row.user_id === userId) ? row : undefined;
}

export type PayOutcome =
  | { code: 'paid'; order: OrderRow; replayed: boolean }
  /** no such payment intent, or it is bound to another order */
  | { code: 'unknown-intent' }
  /** it cannot be paid (any more): paid with another payment, cancelled, expired, final */
  | { code: 'conflict'; order: OrderRow }
  /** that provider payment id already paid another order */
  | { code: 'payment-used' }
  /** the notice pays another amount (or currency) than the order's total: nothing paid */
  | { code: 'amount-mismatch'; order: OrderRow; expected: { amount: number; currency: string } };

/** What the provider's verified notice says was paid. */
export interface Settlement {
  orderId: string;
  /** the intent the buyer started (payment-intents-repository.ts): the one order it may pay */
  intentId: string;
  /** the provider's id of the payment */
  paymentId: string;
  /** what the provider says it charged (minor units, ISO 4217 upper case): a priced order's
   * total must match it */
  amount?: number | undefined;
  currency?: string | undefined;
}

/**
 * Marks an order paid by the provider's verified payment of its intent, if it still awaits
 * payment and its window is open: the one arbiter against expire and cancel. The same payment
 * again answers the same result. Only a provider's signed payment notice calls this; no buyer can.
 */
export async function payOrder(
  deps: Pick<PaymentWindowDeps, 'rows'>,
  settlement: Settlement,
): Promise<PayOutcome> {
  const row = await deps.rows.markPaid(settlement);
  if (row === 'payment-used') return { code: 'payment-used' };
  if (row) return { code: 'paid', order: row, replayed: false };
  const intent = await deps.rows.findIntent(settlement.intentId);
  if (!intent || intent.order_id !== settlement.orderId) return { code: 'unknown-intent' };
  const current = (await deps.rows.findOrder(settlement.orderId))!;
  if (current.status === 'paid' && current.payment_id === settlement.paymentId) {
    return { code: 'paid', order: current, replayed: true };
  }
  if (current.status === 'awaiting_payment' && current.total_amount !== null) {
    const expected = { amount: Number(current.total_amount), currency: current.currency! };
    if (settlement.amount !== expected.amount || settlement.currency !== expected.currency) {
      return { code: 'amount-mismatch', order: current, expected };
    }
  }
  return { code: 'conflict', order: current };
}

export type CloseOutcome =
  | { code: 'closed'; order: OrderRow }
  | { code: 'not-found' }
  /** it is not awaiting payment (or, for an expiry, not due yet) */
  | { code: 'conflict'; order: OrderRow };

/**
 * Cancels (by its buyer) or expires (from its deadline on) an order that still awaits payment,
 * then returns its units. A cancel of an order already cancelled answers that order.
 */
export async function closeOrder(
  deps: PaymentWindowDeps,
  orderId: string,
  to: 'cancelled' | 'expired',
  userId?: string,
): Promise<CloseOutcome> {
  const row = await deps.rows.close(orderId, to, userId);
  if (row) {
    await returnUnits(deps, row);
    return { code: 'closed', order: row };
  }
  const current = await orderAsSeenBy(deps.rows, orderId, userId);
  return current ? { code: 'conflict', order: current } : { code: 'not-found' };
}

/**
 * Puts a closed (or refunded) order's units back on sale in the segment they came from, frees its
 * buyer's limit (the policy), tells every process, and records it done. A refund's units come
 * back only while its sale runs: after the end the row records them kept sold. Every step is
 * idempotent, so the sweep may run it again for a row a crash left without either mark.
 */
export async function returnUnits(deps: PaymentWindowDeps, row: OrderRow): Promise<void> {
  const order: ReturnedOrder = {
    productId: row.product_id,
    segment: row.segment,
    homeSegment: row.home_segment,
    epoch: row.epoch,
    orderId: row.id,
    quantity: row.quantity,
    userId: row.user_id,
    refund: row.status === 'refunded',
  };
  const r = await deps.units.restock(order);
  if (r.code === 'ended') {
    await deps.rows.markKept(row.id);
    deps.logger?.debug({ orderId: row.id }, 'refund after its sale ended: units kept sold');
    return;
  }
  if (deps.returnFreesLimit) await deps.units.releaseMarker(order);
  // a lost sale's unit is already on sale again (the failover): nothing came back to announce
  if (r.code !== 'stale-epoch' && r.code !== 'lost') {
    await deps.catalogue.announceRestock(row.product_id, row.epoch, row.segment);
  }
  await deps.rows.markRestocked(row.id);
  if (r.code === 'lost') {
    deps.logger?.warn(
      { orderId: row.id, status: row.status, segment: row.segment },
      'closed order whose sale its segment lost (a failover): nothing returned',
    );
  } else
    deps.logger?.debug({ orderId: row.id, status: row.status, restock: r.code }, 'units returned');
}

/** How many overdue orders one sweep expires, and closed ones it finishes returning. */
const SWEEP_BATCH = 500;

/**
 * The sweep behind the expiry jobs: expires orders overdue by `graceMs` (their job was lost or
 * is late), finishes returns a crash cut short, and forgets payment notices past their
 * retention. Returns what it did.
 */
export async function sweepPayments(
  deps: PaymentWindowDeps,
  graceMs: number,
): Promise<{ expired: number; returned: number }> {
  const overdue = await deps.rows.overdueIds(graceMs, SWEEP_BATCH);
  let expired = 0;
  for (const id of overdue) {
    if ((await closeOrder(deps, id, 'expired')).code === 'closed') expired++;
  }
  const unreturned = await deps.rows.unreturned(graceMs, SWEEP_BATCH);
  for (const row of unreturned) await returnUnits(deps, row);
  await deps.rows.pruneNotices();
  if (expired || unreturned.length) {
    deps.logger?.info(
      { expired, returned: unreturned.length },
      'payment sweep: overdue orders expired, cut-short returns finished',
    );
  }
  return { expired, returned: unreturned.length };
}

/**
 * An order's expiry job: expires it if it still awaits payment. A job that comes up before the
 * deadline on PostgreSQL's clock (clocks a little apart) fails, and BullMQ retries it. A retry
 * of a job whose return was cut short (the transition committed, then Redis failed) finishes
 * that return itself: the unit is on sale again now, not a sweep (SWEEP_MIN_AGE_MS) later.
 */
export async function expireOrder(deps: PaymentWindowDeps, orderId: string): Promise<string> {
  const r = await closeOrder(deps, orderId, 'expired');
  if (r.code === 'conflict' && r.order.status === 'awaiting_payment') {
    throw new Error(`order ${orderId} is not due yet (pay by ${r.order.pay_by?.toISOString()})`);
  }
  if (r.code === 'conflict' && r.order.status === 'expired' && !r.order.restocked_at) {
    await returnUnits(deps, r.order);
    return 'returned';
  }
  return r.code === 'conflict' ? r.order.status : r.code;
}
