/**
 * Stripe's events read as payment notices (docs/payments.md#stripe): which order an event is
 * about and what it says of its payment. The route verifies the signature, parses the event and
 * answers; the rules are here.
 *
 * - `payment_intent.succeeded` settles the order named in the PaymentIntent's metadata
 *   (`orderId`, or `order_id`) with the payment intent its buyer started (the metadata's
 *   `paymentIntentId`, or the order's one), the amount received and its currency checked against
 *   the order's total, Stripe's PaymentIntent id as the payment id.
 * - `charge.refunded` refunds the order its Charge's PaymentIntent paid: wholly refunded
 *   (`refunded: true`), the order is refunded; a part of it leaves the order as it is.
 * - `charge.dispute.*` opens, wins or loses the dispute of the order its PaymentIntent paid, by
 *   the dispute's status in the event (Stripe does not keep its events in order: the status
 *   each carries is what counts): `won`, `warning_closed` (an inquiry closed) and `prevented`
 *   are won, `lost` is lost, anything else is open.
 *
 * Anything else, a PaymentIntent without an order id, a charge or a dispute of a payment no
 * order was paid by (something else sold on the same Stripe account) changes nothing. A notice
 * the order cannot take is refused: recorded and counted (payment-notices.ts), and answered 2xx
 * so Stripe stops retrying it, as Stripe asks of an endpoint.
 */
import type { NoticeAnswer } from '../../orders/index.js';
import type { OrderView } from './order-view.js';
import { refusalOf, type NoticeWork, type PaymentNotices } from './payment-notices.js';

/** What the rules read of a Stripe event (Stripe sends much more). */
export interface StripeEvent {
  /** evt_...: Stripe's id of the event, the same on each redelivery */
  id: string;
  type: string;
  data: { object: StripeObject };
}

/** The event's object: a PaymentIntent, a Charge or a Dispute (each read for what it has). */
export interface StripeObject {
  /** pi_..., ch_... or dp_... */
  id: string;
  amount?: number | undefined;
  /** a PaymentIntent's */
  amount_received?: number | undefined;
  /** lower case, as Stripe sends it */
  currency?: string | undefined;
  metadata?: Record<string, string> | undefined;
  /** a Charge's or a Dispute's PaymentIntent (pi_...) */
  payment_intent?: string | null | undefined;
  /** a Charge's: refunded in whole, and how much */
  refunded?: boolean | undefined;
  amount_refunded?: number | undefined;
  /** a Dispute's */
  status?: string | undefined;
}

export type StripeOutcome =
  | { code: 'ok'; order: OrderView; replayed: boolean }
  /** nothing to do: another type, or not a payment of an order */
  | { code: 'ignored'; why: string }
  /** the order cannot take it: recorded for a person, and acknowledged */
  | { code: 'refused'; reason: string; detail: string; order?: OrderView | undefined }
  /** the event names an order or a PaymentIntent in a form no order or intent has */
  | { code: 'invalid'; detail: string };

/** An order id as this service mints them (a UUID). */
const ORDER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A Stripe PaymentIntent id. */
const STRIPE_PAYMENT_INTENT = /^pi_[A-Za-z0-9_]{1,250}$/;

/** A dispute's statuses that end it for the shop (the money stays) or for the buyer. */
const DISPUTE_WON = new Set(['won', 'warning_closed', 'prevented']);
const DISPUTE_LOST = new Set(['lost']);

export class StripeNotices {
  constructor(private readonly notices: Pick<PaymentNotices, 'receive'>) {}

  /** Handles `event` once per Stripe event id; `render` makes what it did the answer to keep. */
  receive(
    event: StripeEvent,
    render: (outcome: StripeOutcome) => NoticeAnswer,
  ): Promise<NoticeAnswer & { replayed: boolean }> {
    return this.notices.receive('stripe', event.id, async (work) =>
      render(await this.handle(event, work)),
    );
  }

  /** What `event` does, inside its notice's transaction. */
  async handle(event: StripeEvent, work: NoticeWork): Promise<StripeOutcome> {
    if (event.type === 'payment_intent.succeeded') return this.succeeded(event.data.object, work);
    if (event.type === 'charge.refunded') return this.refunded(event.data.object, work);
    if (event.type.startsWith('charge.dispute.')) return this.disputed(event.data.object, work);
    return { code: 'ignored', why: `events of type ${event.type} change nothing` };
  }

  private async succeeded(intent: StripeObject, work: NoticeWork): Promise<StripeOutcome> {
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
    const intentId = intent.metadata?.paymentIntentId ?? (await work.intentOf(orderId));
    const outcome = await work.settle({
      orderId,
      intentId,
      paymentId: intent.id,
      amount: intent.amount_received ?? intent.amount,
      currency: intent.currency?.toUpperCase(),
    });
    if (outcome.code === 'ok') return outcome;
    const refusal = refusalOf(outcome);
    if (!refusal) throw new Error(`a payment's settlement ended ${outcome.code}`);
    return { code: 'refused', ...refusal, order: 'order' in outcome ? outcome.order : undefined };
  }

  private async refunded(charge: StripeObject, work: NoticeWork): Promise<StripeOutcome> {
    const paymentId = paymentIntentOf(charge);
    if (typeof paymentId !== 'string') return paymentId;
    const currency = charge.currency?.toUpperCase();
    const whole =
      charge.refunded === true ||
      (charge.amount !== undefined && (charge.amount_refunded ?? 0) >= charge.amount);
    return work.refund(
      { paymentId, whole },
      charge.amount_refunded !== undefined && currency !== undefined
        ? { amount: charge.amount_refunded, currency }
        : undefined,
    );
  }

  private async disputed(dispute: StripeObject, work: NoticeWork): Promise<StripeOutcome> {
    const paymentId = paymentIntentOf(dispute);
    if (typeof paymentId !== 'string') return paymentId;
    const status = dispute.status ?? '';
    const outcome = DISPUTE_WON.has(status) ? 'won' : DISPUTE_LOST.has(status) ? 'lost' : 'open';
    return work.dispute({ paymentId, disputeId: dispute.id, outcome });
  }
}

/** The PaymentIntent a Charge or a Dispute belongs to: the payment id an order was paid by. */
function paymentIntentOf(object: StripeObject): string | StripeOutcome {
  const id = object.payment_intent;
  if (id === undefined || id === null) {
    return { code: 'ignored', why: `${object.id} has no PaymentIntent: no order was paid by it` };
  }
  if (!STRIPE_PAYMENT_INTENT.test(id)) {
    return { code: 'invalid', detail: 'data.object.payment_intent must be a PaymentIntent id' };
  }
  return id;
}
