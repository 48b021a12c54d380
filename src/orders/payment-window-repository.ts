/**
 * The SQL of the payment window (payment-window.ts decides, this file only speaks to
 * PostgreSQL): the conditional transitions that arbitrate pay / cancel / expire on PostgreSQL's
 * clock, the restocked_at mark, the sweep's reads, and, for the payments service, the intents
 * and payment notices. One object per database or per transaction (`noticeOnce` hands its
 * handler one bound to the delivery's transaction).
 */
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { OrderRow, PaymentIntentRow } from '../db/schema.js';
import {
  findIntent,
  intentOfOrder,
  startPaymentIntent,
  type StartOutcome,
} from './payment-intents-repository.js';
import type { DisputeChange } from './after-paid.js';
import type { PaymentRefusal, Settlement } from './payment-window.js';
import { OrdersRepository } from './repository.js';
import {
  noticeOnce,
  pruneNotices,
  type NoticeAnswer,
  type NoticeKey,
} from './payment-notices-repository.js';

export class PaymentRepository extends OrdersRepository {
  constructor(db: Db) {
    super(db);
  }

  /**
   * awaiting_payment -> paid, while pay_by is ahead on PostgreSQL's clock and the intent is
   * this order's. @returns the paid row; `payment-used` when that provider payment id already
   * paid another order (the unique key); undefined when the transition did not apply.
   */
  async markPaid(settlement: Settlement): Promise<OrderRow | 'payment-used' | undefined> {
    // Inside a payment notice's transaction a unique violation aborts the whole transaction
    // (the delivery could not be recorded): a savepoint confines it to this statement.
    if (!this.db.isTransaction) return this.markPaidStatement(settlement);
    await sql`savepoint mark_paid`.execute(this.db);
    const row = await this.markPaidStatement(settlement);
    await sql
      .raw(
        row === 'payment-used' ? 'rollback to savepoint mark_paid' : 'release savepoint mark_paid',
      )
      .execute(this.db);
    return row;
  }

  private async markPaidStatement(
    settlement: Settlement,
  ): Promise<OrderRow | 'payment-used' | undefined> {
    try {
      return await this.db
        .updateTable('orders')
        .set({ status: 'paid', payment_id: settlement.paymentId, closed_at: sql`now()` })
        .where('id', '=', settlement.orderId)
        .where('status', '=', 'awaiting_payment')
        .where('pay_by', '>', sql<Date>`now()`)
        // a priced order is paid only by its total, in its currency
        .where(
          sql<boolean>`(total_amount is null or (total_amount = ${settlement.amount ?? null}
            and currency = ${settlement.currency ?? null}))`,
        )
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom('payment_intents')
              .select('id')
              .where('payment_intents.id', '=', settlement.intentId)
              .where('payment_intents.order_id', '=', settlement.orderId),
          ),
        )
        .returningAll()
        .executeTakeFirst();
    } catch (err) {
      if ((err as { code?: string }).code === '23505') return 'payment-used';
      throw err;
    }
  }

  /**
   * awaiting_payment -> cancelled | expired (an expiry only from pay_by on, PostgreSQL's clock;
   * `userId`: only that buyer's order). @returns the closed row; undefined when it did not apply.
   */
  close(
    orderId: string,
    to: 'cancelled' | 'expired',
    userId?: string,
  ): Promise<OrderRow | undefined> {
    return this.db
      .updateTable('orders')
      .set({ status: to, closed_at: sql`now()` })
      .where('id', '=', orderId)
      .where('status', '=', 'awaiting_payment')
      .$if(to === 'expired', (q) => q.where('pay_by', '<=', sql<Date>`now()`))
      .$if(userId !== undefined, (q) => q.where('user_id', '=', userId!))
      .returningAll()
      .executeTakeFirst();
  }

  /** Records that a closed order's units are back (once: the first time counts). */
  async markRestocked(orderId: string): Promise<void> {
    await this.db
      .updateTable('orders')
      .set({ restocked_at: sql`now()` })
      .where('id', '=', orderId)
      .where('restocked_at', 'is', null)
      .execute();
  }

  /** Up to `limit` orders still awaiting payment `graceMs` past their pay_by. */
  async overdueIds(graceMs: number, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('orders')
      .select('id')
      .where('status', '=', 'awaiting_payment')
      .where('pay_by', '<', sql<Date>`now() - ${graceMs} * interval '1 millisecond'`)
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /**
   * Up to `limit` orders closed (or refunded) over `graceMs` ago whose units are neither back
   * nor kept yet.
   */
  async unreturned(graceMs: number, limit: number): Promise<OrderRow[]> {
    const before = sql<Date>`now() - ${graceMs} * interval '1 millisecond'`;
    const closed = await this.db
      .selectFrom('orders')
      .selectAll()
      .where('status', 'in', ['cancelled', 'expired'])
      .where('restocked_at', 'is', null)
      .where('closed_at', '<', before)
      .limit(limit)
      .execute();
    const refunded = await this.db
      .selectFrom('orders')
      .selectAll()
      .where('status', '=', 'refunded')
      .where('restocked_at', 'is', null)
      .where('units_kept_at', 'is', null)
      .where('refunded_at', '<', before)
      .limit(limit - closed.length)
      .execute();
    return [...closed, ...refunded];
  }

  /** Records that a refund's units stay sold (its sale had ended): once, the first time counts. */
  async markKept(orderId: string): Promise<void> {
    await this.db
      .updateTable('orders')
      .set({ units_kept_at: sql`now()` })
      .where('id', '=', orderId)
      .where('units_kept_at', 'is', null)
      .where('restocked_at', 'is', null)
      .execute();
  }

  /** paid -> refunded. @returns the refunded row; undefined when no paid order has that payment */
  refund(paymentId: string): Promise<OrderRow | undefined> {
    return this.db
      .updateTable('orders')
      .set({ status: 'refunded', refunded_at: sql`now()` })
      .where('payment_id', '=', paymentId)
      .where('status', '=', 'paid')
      .returningAll()
      .executeTakeFirst();
  }

  /**
   * A dispute's transition: opened (paid -> disputed, unless this order's dispute closed
   * already), won (-> paid) or lost (-> dispute_lost) from disputed, or from paid when the
   * provider's word of its opening comes after its close. @returns the row; undefined when it
   * did not apply
   */
  dispute(change: DisputeChange): Promise<OrderRow | undefined> {
    const noOtherDispute = sql<boolean>`(dispute_id is null or dispute_id = ${change.disputeId})`;
    if (change.outcome === 'open') {
      return this.db
        .updateTable('orders')
        .set({ status: 'disputed', dispute_id: change.disputeId, disputed_at: sql`now()` })
        .where('payment_id', '=', change.paymentId)
        .where('status', '=', 'paid')
        .where('dispute_closed_at', 'is', null)
        .where(noOtherDispute)
        .returningAll()
        .executeTakeFirst();
    }
    return this.db
      .updateTable('orders')
      .set({
        status: change.outcome === 'won' ? 'paid' : 'dispute_lost',
        dispute_id: change.disputeId,
        disputed_at: sql`coalesce(disputed_at, now())`,
        dispute_closed_at: sql`now()`,
      })
      .where('payment_id', '=', change.paymentId)
      .where('status', 'in', ['paid', 'disputed'])
      .where('dispute_closed_at', 'is', null)
      .where(noOtherDispute)
      .returningAll()
      .executeTakeFirst();
  }

  /** The order `paymentId` paid, if any (one: the payment id is unique). */
  findByPayment(paymentId: string): Promise<OrderRow | undefined> {
    return this.db
      .selectFrom('orders')
      .selectAll()
      .where('payment_id', '=', paymentId)
      .executeTakeFirst();
  }

  findIntent(id: string): Promise<PaymentIntentRow | undefined> {
    return findIntent(this.db, id);
  }

  intentOfOrder(orderId: string): Promise<PaymentIntentRow | undefined> {
    return intentOfOrder(this.db, orderId);
  }

  startIntent(orderId: string, userId: string): Promise<StartOutcome> {
    return startPaymentIntent(this.db, orderId, userId);
  }

  async recordRefusal(refusal: PaymentRefusal): Promise<void> {
    await this.db
      .insertInto('payment_refusals')
      .values({
        order_id: refusal.orderId,
        payment_id: refusal.paymentId,
        reason: refusal.reason,
        amount: refusal.paid?.amount ?? null,
        currency: refusal.paid?.currency ?? null,
        expected_amount: refusal.expected?.amount ?? null,
        expected_currency: refusal.expected?.currency ?? null,
        provider: refusal.provider ?? null,
        notice_id: refusal.noticeId ?? null,
        detail: refusal.detail ?? null,
      })
      .onConflict((oc) => oc.constraint('payment_refusals_once').doNothing())
      .execute();
  }

  /** Forgets payment notices past their retention. @returns how many */
  pruneNotices(): Promise<number> {
    return pruneNotices(this.db);
  }

  /** Runs `handle` for the first delivery of `notice` only, inside its transaction. */
  noticeOnce(
    notice: NoticeKey,
    handle: (tx: PaymentRepository) => Promise<NoticeAnswer>,
  ): Promise<NoticeAnswer & { replayed: boolean }> {
    return noticeOnce(this.db, notice, (tx) => handle(new PaymentRepository(tx)));
  }
}
