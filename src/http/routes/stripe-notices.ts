/**
 * `POST /payments/stripe`: Stripe's `payment_intent.succeeded` event, so a shop points its Stripe
 * endpoint here with nothing of its own in between (docs/payments.md#stripe). The adapter:
 *
 * - verifies `Stripe-Signature` (`t=...,v1=...`, one v1 per active secret: any may match) with
 *   STRIPE_WEBHOOK_SECRET, within PAYMENT_WEBHOOK_TOLERANCE_S (Stripe's default is 300 s);
 * - finds the order in the PaymentIntent's metadata (`orderId`, or `order_id`), and the payment
 *   intent its buyer started (metadata `paymentIntentId`, or the order's one);
 * - settles it as any verified notice, the amount received and the currency checked against the
 *   order's total, the Stripe PaymentIntent's id as the payment id (it pays one order);
 * - runs once per Stripe event id: a redelivery (Stripe retries for 3 days) gets the first answer.
 *
 * An event of another type, or a PaymentIntent without an order id (a payment of something else
 * on the same Stripe account), is acknowledged and changes nothing.
 */
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import type { Payments } from '../../services/index.js';
import type { RawBodyRequest } from '../server/body.js';
import { answer, UUID } from './orders.js';
import { PROBLEM_JSON, problemBody } from '../problem.js';
import { parseOr400 } from '../validation.js';
import { verifyTimestampedHmac } from '../notice-signature.js';

export const STRIPE_SIGNATURE = 'stripe-signature';

/** What the adapter reads of a Stripe event (Stripe sends much more: it is let through). */
export const stripeEvent = z.looseObject({
  id: z.string().regex(/^evt_[A-Za-z0-9_]{1,255}$/, 'must be a Stripe event id (evt_...)'),
  type: z.string().min(1).max(128),
  data: z.looseObject({
    object: z.looseObject({
      id: z.string().min(1).max(255),
      amount: z.number().int().min(0).optional(),
      amount_received: z.number().int().min(0).optional(),
      currency: z
        .string()
        .regex(/^[a-z]{3}$/i)
        .optional(),
      metadata: z.record(z.string(), z.string()).optional(),
    }),
  }),
});

type Answer = { status: number; body: unknown };

const ignored = (why: string): Answer => ({ status: 200, body: { received: true, ignored: why } });

async function settle(req: Request, pay: Payments, tx?: Parameters<Payments['settle']>[1]) {
  try {
    const event = parseOr400(stripeEvent, req.body, 'Stripe event');
    if (event.type !== 'payment_intent.succeeded') {
      return ignored(`events of type ${event.type} change nothing`);
    }
    const intent = event.data.object;
    const orderId = intent.metadata?.orderId ?? intent.metadata?.order_id;
    if (orderId === undefined) return ignored('no orderId in the PaymentIntent metadata');
    if (!UUID.test(orderId) || !/^pi_[A-Za-z0-9_]{1,250}$/.test(intent.id)) {
      throw new ProblemError({
        status: 400,
        code: 'invalid-request',
        title: 'Invalid Stripe event',
        detail: 'metadata.orderId must be an order id (UUID), data.object.id a PaymentIntent id',
      });
    }
    // the buyer started paying (POST /orders/:id/pay) before the shop created Stripe's intent
    const intentId = intent.metadata?.paymentIntentId ?? (await pay.intentOf(orderId));
    const outcome = intentId
      ? await pay.settle(
          {
            orderId,
            intentId,
            paymentId: intent.id,
            amount: intent.amount_received ?? intent.amount,
            currency: intent.currency?.toUpperCase(),
          },
          tx,
        )
      : ({ code: 'unknown-intent' } as const);
    return { status: 200, body: answer(outcome, orderId) };
  } catch (err) {
    if (!(err instanceof ProblemError) || err.status >= 500) throw err;
    return { status: err.status, body: problemBody(req, err) };
  }
}

function send(res: Response, given: Answer, replayed: boolean) {
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.status(given.status);
  if (given.status >= 400) res.type(PROBLEM_JSON).send(JSON.stringify(given.body));
  else res.json(given.body);
}

export function mountStripeNotices(
  router: IRouter,
  deps: { payments: Config['payments']; pay: Payments },
): void {
  router.post('/payments/stripe', async (req: Request, res) => {
    const secret = deps.payments.stripeWebhookSecret;
    if (!secret) {
      throw new ProblemError({
        status: 503,
        code: 'webhook-disabled',
        title: 'Stripe webhook not configured',
        detail: "set STRIPE_WEBHOOK_SECRET (the Stripe endpoint's signing secret) to accept it",
      });
    }
    const raw = (req as RawBodyRequest).rawBody;
    const header = req.headers[STRIPE_SIGNATURE];
    if (!raw || typeof header !== 'string') {
      throw new ProblemError({
        status: raw ? 401 : 400,
        code: raw ? 'invalid-signature' : 'invalid-request',
        title: raw ? 'Invalid signature' : 'Invalid Stripe event',
        detail: raw ? 'send the Stripe-Signature header' : 'send the event as application/json',
      });
    }
    verifyTimestampedHmac(
      header,
      raw,
      { secret, toleranceSeconds: deps.payments.webhookToleranceSeconds },
      'Stripe-Signature',
    );
    const id = (req.body as { id?: unknown } | undefined)?.id;
    if (typeof id !== 'string' || !/^evt_[A-Za-z0-9_]{1,255}$/.test(id)) {
      return send(res, await settle(req, deps.pay), false);
    }
    const r = await deps.pay.once({ provider: 'stripe', id }, (tx) => settle(req, deps.pay, tx));
    send(res, r, r.replayed);
  });
}
