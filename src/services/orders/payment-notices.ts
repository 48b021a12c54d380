/**
 * What a payment provider's verified notice does, whichever provider sent it (the routes verify
 * and parse it; stripe-notices.ts reads Stripe's events): a payment settles its order, a refund
 * or a dispute changes a paid one (orders/after-paid.ts).
 *
 * - A notice with an id is handled once (by provider and id), in one transaction that records
 *   its answer; a redelivery gets that answer and changes nothing.
 * - A refusal (the notice changed nothing, and a person must look: a payment to refund, a refund
 *   or a dispute the order could not take) is kept in payment_refusals in that transaction, and
 *   counted once it committed (seckill_payment_notices_refused_total, the
 *   SeckillPaymentNoticesRefused alert).
 * - A refund's units go back on sale only once its transaction committed: before, a rollback
 *   would leave a paid order whose units are on sale again. A return that fails then is
 *   finished by the sweep.
 */
import {
  disputeOrder,
  refundOrder,
  returnUnits,
  type AfterPaidOutcome,
  type DisputeChange,
  type NoticeAnswer,
  type NoticeProvider,
  type OrderRow,
  type PaymentWindowDeps,
  type Refund,
  type Settlement,
} from '../../orders/index.js';
import { rowView, type OrderView } from './order-view.js';
import {
  conflictOf,
  type Payments,
  type PaymentOutcome,
  type PaymentRecords,
  type ConflictState,
} from './payments.js';

/** Who sent a notice: Stripe, a provider signing as Standard Webhooks, or as Seckill-Signature. */
export type NoticeSource = NoticeProvider | 'seckill-signature';

export const NOTICE_SOURCES: readonly NoticeSource[] = [
  'stripe',
  'standard-webhooks',
  'seckill-signature',
];

/** Counts refused notices, by provider and reason (the composition root's prom-client counter). */
export interface NoticeMetrics {
  refused(provider: NoticeSource, reason: string): void;
}

/** The problem code a conflict is answered with, and recorded under. */
const CONFLICT_REASON: Record<ConflictState, string> = {
  paid: 'order-paid',
  cancelled: 'order-cancelled',
  expired: 'order-expired',
  'window-closed': 'order-expired',
  final: 'order-final',
  refunded: 'order-refunded',
  disputed: 'order-disputed',
  dispute_lost: 'order-dispute-lost',
};

/** Every reason a notice is refused for (a metric's series start at 0 for each). */
export const REFUSAL_REASONS = [
  'amount-mismatch',
  'payment-id-used',
  'unknown-payment-intent',
  ...new Set(Object.values(CONFLICT_REASON)),
  'partial-refund',
] as const;

/** Why a notice changed nothing: its answer's problem code, and the words for a person. */
export interface Refusal {
  reason: string;
  detail: string;
}

/** What a paid order's refund or dispute did, as the order's view. */
export type AfterPaidAnswer =
  | { code: 'ok'; order: OrderView; replayed: boolean }
  /** nothing to do: no order was paid by that payment, or an older word of a closed dispute */
  | { code: 'ignored'; why: string }
  | ({ code: 'refused'; order: OrderView } & Refusal);

/** The refusal a payment's outcome is, if it is one (ok, settling and not-found are not). */
export function refusalOf(outcome: PaymentOutcome): Refusal | undefined {
  switch (outcome.code) {
    case 'amount-mismatch': {
      const { paid, order } = outcome;
      const named =
        paid.amount === undefined
          ? 'names no amount'
          : `pays ${paid.amount} ${paid.currency ?? ''}`;
      return {
        reason: 'amount-mismatch',
        detail: `the notice ${named.trim()}; order ${order.orderId} costs ${order.total!.amount} ${order.total!.currency}: nothing was paid (recorded for a refund)`,
      };
    }
    case 'payment-used':
      return { reason: 'payment-id-used', detail: 'this payment id settled another order' };
    case 'unknown-intent':
      return {
        reason: 'unknown-payment-intent',
        detail: 'no payment intent of the order has that id',
      };
    case 'conflict':
      return {
        reason: CONFLICT_REASON[outcome.state],
        detail: `order ${outcome.order.orderId} is ${outcome.order.status}${
          outcome.order.payBy ? ` (pay by ${outcome.order.payBy})` : ''
        }`,
      };
    default:
      return undefined;
  }
}

/** One notice's handling, inside its transaction. */
export class NoticeWork {
  constructor(
    private readonly ctx: {
      rows: PaymentRecords;
      payments: Pick<Payments, 'settle'>;
      source: NoticeSource;
      noticeId: string | undefined;
      /** refused reasons, counted once the transaction committed */
      refused: string[];
      /** refunded orders whose units go back once the transaction committed */
      returns: OrderRow[];
    },
  ) {}

  /** The order's payment intent the buyer started, for a notice that names only the order. */
  async intentOf(orderId: string): Promise<string | undefined> {
    return (await this.ctx.rows.intentOfOrder(orderId))?.id;
  }

  /**
   * A payment of an order: settles it, or records why not (no payment intent the buyer started
   * is `unknown-intent`).
   */
  async settle(
    settlement: Omit<Settlement, 'intentId'> & { intentId: string | undefined },
  ): Promise<PaymentOutcome> {
    const { intentId } = settlement;
    const outcome: PaymentOutcome =
      intentId === undefined
        ? { code: 'unknown-intent' }
        : await this.ctx.payments.settle({ ...settlement, intentId }, this.ctx.rows);
    const refusal = refusalOf(outcome);
    if (refusal) {
      const expected = outcome.code === 'amount-mismatch' ? outcome.order.total : undefined;
      await this.refuse(settlement.orderId, settlement.paymentId, refusal, {
        paid: { amount: settlement.amount, currency: settlement.currency },
        expected,
      });
    }
    return outcome;
  }

  /** A refund of the payment that paid an order. */
  async refund(refund: Refund, refunded?: { amount: number; currency: string }) {
    const outcome = await refundOrder(this.ctx.rows, refund);
    if (outcome.code === 'changed' && !outcome.replayed) this.ctx.returns.push(outcome.order);
    if (outcome.code === 'partial') {
      const order = rowView(outcome.order);
      const part = refunded ? `${refunded.amount} ${refunded.currency} of it` : 'a part of it';
      const refusal = {
        reason: 'partial-refund',
        detail: `order ${order.orderId} was paid by ${refund.paymentId} and ${part} was refunded: the order stays ${order.status} (recorded)`,
      };
      await this.refuse(order.orderId, refund.paymentId, refusal, {
        paid: refunded,
        expected: order.total,
      });
      return { code: 'refused', order, ...refusal } as const;
    }
    return this.afterPaid(outcome, refund.paymentId, 'refund');
  }

  /** A dispute's word: opened, won or lost. */
  async dispute(change: DisputeChange): Promise<AfterPaidAnswer> {
    const outcome = await disputeOrder(this.ctx.rows, change);
    if (outcome.code === 'partial') throw new Error('a dispute is never partial');
    return this.afterPaid(outcome, change.paymentId, 'dispute');
  }

  private async afterPaid(
    outcome: Exclude<AfterPaidOutcome, { code: 'partial' }>,
    paymentId: string,
    what: 'refund' | 'dispute',
  ): Promise<AfterPaidAnswer> {
    switch (outcome.code) {
      case 'changed':
        return { code: 'ok', order: rowView(outcome.order), replayed: outcome.replayed };
      case 'no-order':
        return {
          code: 'ignored',
          why: `no order was paid by ${paymentId}: a ${what} of a payment refused, or of something else`,
        };
      case 'stale':
        return {
          code: 'ignored',
          why: `the dispute of order ${outcome.order.id} closed already: an older word of it changes nothing`,
        };
      case 'conflict': {
        const { order } = conflictOf(outcome.order);
        const refusal = refusalOf(conflictOf(outcome.order))!;
        const detail = `a ${what} of ${paymentId}: ${refusal.detail}, which takes no ${what} (recorded)`;
        await this.refuse(order.orderId, paymentId, { reason: refusal.reason, detail });
        return { code: 'refused', order, reason: refusal.reason, detail };
      }
    }
  }

  private async refuse(
    orderId: string,
    paymentId: string,
    refusal: Refusal,
    sums: {
      paid?: { amount?: number | undefined; currency?: string | undefined } | undefined;
      expected?: { amount: number; currency: string } | undefined;
    } = {},
  ): Promise<void> {
    await this.ctx.rows.recordRefusal({
      orderId,
      paymentId,
      reason: refusal.reason,
      paid: sums.paid,
      expected: sums.expected,
      provider: this.ctx.source,
      noticeId: this.ctx.noticeId,
      detail: refusal.detail,
    });
    this.ctx.refused.push(refusal.reason);
  }
}

export class PaymentNotices {
  constructor(
    private readonly deps: {
      window: PaymentWindowDeps & { rows: PaymentRecords };
      payments: Pick<Payments, 'settle'>;
      metrics?: NoticeMetrics | undefined;
    },
  ) {}

  /**
   * Handles a notice: once per `noticeId` when it has one (a redelivery gets the first answer,
   * `replayed`), and `render`s what it did as the answer to record. Refunded units go back and
   * refusals are counted after the commit.
   */
  async receive(
    source: NoticeSource,
    noticeId: string | undefined,
    handle: (work: NoticeWork) => Promise<NoticeAnswer>,
  ): Promise<NoticeAnswer & { replayed: boolean }> {
    const refused: string[] = [];
    const returns: OrderRow[] = [];
    const run = (rows: PaymentRecords) =>
      handle(
        new NoticeWork({
          rows,
          payments: this.deps.payments,
          source,
          noticeId,
          refused,
          returns,
        }),
      );
    const { rows } = this.deps.window;
    const answer =
      source === 'seckill-signature' || noticeId === undefined
        ? { ...(await run(rows)), replayed: false }
        : await rows.noticeOnce({ provider: source, id: noticeId }, run);
    for (const reason of refused) this.deps.metrics?.refused(source, reason);
    for (const row of returns) {
      try {
        await returnUnits(this.deps.window, row);
      } catch (err) {
        this.deps.window.logger?.warn(
          { err, orderId: row.id },
          'refund committed, its units not returned yet: the sweep returns them',
        );
      }
    }
    return answer;
  }
}
