/**
 * The payment's life after `paid` (docs/payments.md#after-paid-refunds-and-disputes), as the
 * provider's verified notices tell it, each one conditional transition in PostgreSQL by the
 * order's payment id:
 *
 * - a whole refund: paid -> refunded. Its units come back on sale while the sale runs (through
 *   returnUnits, after the refund's transaction committed), and stay sold after its end;
 * - a dispute opened: paid -> disputed; won: -> paid again; lost: -> dispute_lost (the money went
 *   back to the buyer; the units stay sold: a chargeback is not a return).
 *
 * A notice that says what the order already is answers it again (`replayed`); a partial refund
 * changes nothing; an older word of a dispute already closed (providers do not keep their events
 * in order) is stale and changes nothing.
 */
import type { OrderRow } from './repository.js';

/** The SQL of these transitions (payment-window-repository.ts). */
export interface AfterPaidRows {
  /** paid -> refunded; undefined when no paid order has that payment id */
  refund(paymentId: string): Promise<OrderRow | undefined>;
  /** the transition `change` asks for; undefined when it does not apply */
  dispute(change: DisputeChange): Promise<OrderRow | undefined>;
  /** the order that payment paid */
  findByPayment(paymentId: string): Promise<OrderRow | undefined>;
}

/** A provider's word that money of a payment went back to the buyer. */
export interface Refund {
  /** the provider's id of the payment that paid the order */
  paymentId: string;
  /** the whole payment is refunded (a partial refund leaves the order as it is) */
  whole: boolean;
}

/** A provider's word on a dispute of a payment. */
export interface DisputeChange {
  paymentId: string;
  /** the provider's id of the dispute */
  disputeId: string;
  /** open (under way), won (the shop keeps the money) or lost (the buyer got it back) */
  outcome: 'open' | 'won' | 'lost';
}

export type AfterPaidOutcome =
  | { code: 'changed'; order: OrderRow; replayed: boolean }
  /** no order was paid by that payment (a refused payment refunded, or something else sold) */
  | { code: 'no-order' }
  /** a refund of part of the payment: the order stays as it is */
  | { code: 'partial'; order: OrderRow }
  /** an older word of a dispute already closed: nothing changes */
  | { code: 'stale'; order: OrderRow }
  /** the order cannot take it: a refund of a disputed order, a dispute of a refunded one */
  | { code: 'conflict'; order: OrderRow };

export async function refundOrder(rows: AfterPaidRows, refund: Refund): Promise<AfterPaidOutcome> {
  const row = refund.whole ? await rows.refund(refund.paymentId) : undefined;
  if (row) return { code: 'changed', order: row, replayed: false };
  const current = await rows.findByPayment(refund.paymentId);
  if (!current) return { code: 'no-order' };
  if (!refund.whole) return { code: 'partial', order: current };
  if (current.status === 'refunded') return { code: 'changed', order: current, replayed: true };
  return { code: 'conflict', order: current };
}

/** The status each dispute outcome leaves its order in. */
const STATUS_AFTER = { open: 'disputed', won: 'paid', lost: 'dispute_lost' } as const;

export async function disputeOrder(
  rows: AfterPaidRows,
  change: DisputeChange,
): Promise<AfterPaidOutcome> {
  const row = await rows.dispute(change);
  if (row) return { code: 'changed', order: row, replayed: false };
  const current = await rows.findByPayment(change.paymentId);
  if (!current) return { code: 'no-order' };
  const sameDispute = current.dispute_id === change.disputeId;
  const closed = current.dispute_closed_at !== null;
  if (sameDispute && current.status === STATUS_AFTER[change.outcome]) {
    // won before it was seen open keeps the order paid: answered as it is
    if (change.outcome === 'open' || closed) {
      return { code: 'changed', order: current, replayed: true };
    }
  }
  if (sameDispute && closed) return { code: 'stale', order: current };
  return { code: 'conflict', order: current };
}
