/**
 * `POST /payments/stripe`: Stripe's events, so a shop points its Stripe endpoint here with
 * nothing of its own in between (docs/payments.md#stripe). The route verifies `Stripe-Signature`
 * (`t=...,v1=...`, one v1 per active secret: any may match) with STRIPE_WEBHOOK_SECRET within
 * PAYMENT_WEBHOOK_TOLERANCE_S (Stripe's default is 300 s), parses the event, hands it to the
 * orders room's Stripe rules (services/orders/stripe-notices.ts) once per Stripe event id (a
 * redelivery, Stripe retries for 3 days, gets the first answer), and answers.
 */
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import type { StripeNotices, StripeOutcome } from '../../services/index.js';
import type { RawBodyRequest } from '../server/body.js';
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
      payment_intent: z.string().min(1).max(255).nullable().optional(),
      refunded: z.boolean().optional(),
      amount_refunded: z.number().int().min(0).optional(),
      status: z.string().max(64).optional(),
    }),
  }),
});

type Answer = { status: number; body: unknown };

const ignored = (why: string): Answer => ({ status: 200, body: { received: true, ignored: why } });

/**
 * The answer to what the event did, as data (a problem too), so a redelivery can be given it. A
 * refusal is acknowledged (200, recorded by the rules): Stripe retries any other answer for
 * three days and marks the endpoint failing, for a notice that will never be taken.
 */
function answerOf(req: Request, outcome: StripeOutcome): Answer {
  switch (outcome.code) {
    case 'ok':
      return { status: 200, body: outcome.order };
    case 'ignored':
      return ignored(outcome.why);
    case 'refused':
      return {
        status: 200,
        body: {
          received: true,
          refused: { code: outcome.reason, detail: outcome.detail },
          ...(outcome.order && { order: outcome.order }),
        },
      };
    case 'invalid': {
      const err = new ProblemError({
        status: 400,
        code: 'invalid-request',
        title: 'Invalid Stripe event',
        detail: outcome.detail,
      });
      return { status: 400, body: problemBody(req, err) };
    }
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
  deps: { payments: Config['payments']; stripe: StripeNotices },
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
    const event = parseOr400(stripeEvent, req.body, 'Stripe event');
    const r = await deps.stripe.receive(event, (outcome) => answerOf(req, outcome));
    send(res, r, r.replayed);
  });
}
