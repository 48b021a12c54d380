/**
 * Stripe's events read as payment notices (docs/payments.md#stripe): which order an event is
 * about and what it says of its payment. `payment_intent.succeeded` settles the order named in
 * the PaymentIntent's metadata (`orderId`, or `order_id`) with the payment intent its buyer
 * started (the metadata's `paymentIntentId`, or the order's one), the amount received and its
 * currency checked against the order's total, Stripe's PaymentIntent id as the payment id. An
 * event of another type, or a PaymentIntent without an order id (a payment of something else on
 * the same Stripe account), changes nothing. The route verifies the signature, parses the event
 * and answers; the rules are here.
 */
import type { PaymentWindowRows } from '../../orders/index.js';
import type { Payments, PaymentOutcome } from './payments.js';

/** What the rules read of a Stripe event (Stripe sends much more). */
export interface StripeEvent {
  /** evt_...: Stripe's id of the event, the same on each redelivery */
  id: string;
  type: string;
  data: { object: StripeObject };
}

/** The event's object: here a PaymentIntent. */
export interface StripeObject {
  /** pi_... */
  id: string;
  amount?: number | undefined;
  amount_received?: number | undefined;
  /** lower case, as Stripe sends it */
  currency?: string | undefined;
  metadata?: Record<string, string> | undefined;
}

export type StripeOutcome =
  /** nothing to do: another type, or not a payment of an order */
  | { code: 'ignored'; why: string }
  /** the event names an order or a PaymentIntent in a form no order or intent has */
  | { code: 'invalid'; detail: string }
  | { code: 'handled'; orderId: string; outcome: PaymentOutcome };

/** An order id as this service mints them (a UUID). */
const ORDER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A Stripe PaymentIntent id. */
const STRIPE_PAYMENT_INTENT = /^pi_[A-Za-z0-9_]{1,250}$/;

export class StripeNotices {
  constructor(private readonly payments: Pick<Payments, 'settle' | 'intentOf'>) {}

  /** What `event` does; `rows`: the notice's transaction to run in. */
  async handle(event: StripeEvent, rows?: PaymentWindowRows): Promise<StripeOutcome> {
    if (event.type !== 'payment_intent.succeeded') {
      return { code: 'ignored', why: `events of type ${event.type} change nothing` };
    }
    const intent = event.data.object;
    const orderId = intent.metadata?.orderId ?? intent.metadata?.order_id;
    if (orderId === undefined) {
      return { code: 'ignored', why: 'no orderId in the PaymentIntent metadata' };
    }
    if (!ORDER_ID.test(orderId) || !STRIPE_PAYMENT_INTENT.test(intent.id)) {
      return {
        code: 'invalid',
        detail: 'metadata.orderId must be an order id (UUID), data.object.id a PaymentIntent id',
      };
    }
    // the buyer started paying (POST /orders/:id/pay) before the shop created Stripe's intent
    const intentId = intent.metadata?.paymentIntentId ?? (await this.payments.intentOf(orderId));
    const outcome: PaymentOutcome = intentId
      ? await this.payments.settle(
          {
            orderId,
            intentId,
            paymentId: intent.id,
            amount: intent.amount_received ?? intent.amount,
            currency: intent.currency?.toUpperCase(),
          },
          rows,
        )
      : { code: 'unknown-intent' };
    return { code: 'handled', orderId, outcome };
  }
}
