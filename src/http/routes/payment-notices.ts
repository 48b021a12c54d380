/**
 * `POST /payments/webhook`: the payment provider's signed notice that a payment intent was paid
 * (`payment.succeeded`), the only way an order becomes paid. Signed as Seckill-Signature or as
 * Standard Webhooks (notice-signature.ts); a Standard Webhooks delivery is handled once per
 * `webhook-id`: a redelivery answers as the first did and changes nothing.
 */
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import type { NoticeWork, PaymentNotices } from '../../services/index.js';
import type { RawBodyRequest } from '../server/body.js';
import { answer, UUID } from './orders.js';
import { PROBLEM_JSON, problemBody } from '../problem.js';
import { parseOr400 } from '../validation.js';
import { verifyNotice } from '../notice-signature.js';

const paymentId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1-128 of A-Z a-z 0-9 _ . : -');

export const noticeBody = z.object({
  /** only payment.succeeded changes anything; other events are acknowledged and ignored */
  type: z.string().min(1).max(64),
  orderId: z.string().regex(UUID, 'must be an order id (UUID)'),
  /** the intent the buyer started (POST /orders/:id/pay): it must be the order's */
  paymentIntentId: z.string().regex(/^pi_[A-Za-z0-9_-]{22}$/, 'must be a payment intent id'),
  /** the provider's id of the payment */
  paymentId,
  /** what the provider charged, in the currency's minor unit: a priced order's total must match */
  amount: z.number().int().min(0).optional(),
  /** ISO 4217 (any case), with amount */
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, 'must be an ISO 4217 code')
    .optional(),
});

export interface NoticeRoutes {
  payments: Config['payments'];
  notices: PaymentNotices;
}

interface Answer {
  status: number;
  body: unknown;
}

/** The notice's answer as data (a problem too), so a redelivery can be given it again. */
async function handle(req: Request, work: NoticeWork): Promise<Answer> {
  try {
    const event = parseOr400(noticeBody, req.body, 'payment notification');
    if (event.type !== 'payment.succeeded') {
      return {
        status: 200,
        body: { received: true, ignored: `events of type ${event.type} change nothing` },
      };
    }
    const settlement = {
      orderId: event.orderId,
      intentId: event.paymentIntentId,
      paymentId: event.paymentId,
      amount: event.amount,
      currency: event.currency?.toUpperCase(),
    };
    return { status: 200, body: answer(await work.settle(settlement), event.orderId) };
  } catch (err) {
    if (!(err instanceof ProblemError) || err.status >= 500) throw err;
    return { status: err.status, body: problemBody(req, err) };
  }
}

function send(res: Response, answer: Answer, replayed: boolean) {
  if (replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.status(answer.status);
  if (answer.status >= 400) res.type(PROBLEM_JSON).send(JSON.stringify(answer.body));
  else res.json(answer.body);
}

export function mountPaymentNotices(router: IRouter, deps: NoticeRoutes): void {
  router.post('/payments/webhook', async (req: Request, res) => {
    const secret = deps.payments.webhookSecret;
    if (!secret) {
      throw new ProblemError({
        status: 503,
        code: 'webhook-disabled',
        title: 'Payment webhook not configured',
        detail: 'set PAYMENT_WEBHOOK_SECRET to accept payment notifications',
      });
    }
    const raw = (req as RawBodyRequest).rawBody;
    if (!raw) {
      throw new ProblemError({
        status: 400,
        code: 'invalid-request',
        title: 'Invalid payment notification',
        detail: 'send the signed notification as an application/json body',
      });
    }
    const { webhookId } = verifyNotice(req.headers, raw, {
      secret,
      toleranceSeconds: deps.payments.webhookToleranceSeconds,
    });
    const source = webhookId === undefined ? 'seckill-signature' : 'standard-webhooks';
    const r = await deps.notices.receive(source, webhookId, (work) => handle(req, work));
    send(res, r, r.replayed);
  });
}
