/**
 * Orders: `GET /orders/:id` (pending, persisted, or a payment-window state), the buyer's
 * `POST /orders/:id/pay` and `POST /orders/:id/cancel`, and the payment provider's signed
 * `POST /payments/webhook`. Only the buyer (or an admin, reading) may see an order; to anyone
 * else it does not exist (404).
 */
import type { IRouter, Request } from 'express';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import type { OrderLookup, Payments, PaymentOutcome } from '../services/index.js';
import { isAdmin, shopperId } from './auth.js';
import type { RawBodyRequest } from './body.js';
import { parseOr400 } from './validation.js';
import { SIGNATURE_HEADER, verifyWebhook } from './webhook-signature.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const notFound = (id: string) =>
  new ProblemError({
    status: 404,
    code: 'unknown-order',
    title: 'Unknown order',
    detail: `no order ${id}`,
  });

const paymentId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1-128 of A-Z a-z 0-9 _ . : -');

export const payBody = z.strictObject({ paymentId });

export const webhookBody = z.object({
  /** only payment.succeeded changes anything; other events are acknowledged and ignored */
  type: z.string().min(1).max(64),
  orderId: z.string().regex(UUID, 'must be an order id (UUID)'),
  paymentId,
});

const CONFLICT: Record<
  Extract<PaymentOutcome, { code: 'conflict' }>['state'],
  { code: string; title: string }
> = {
  paid: { code: 'order-paid', title: 'Order already paid (with another payment)' },
  cancelled: { code: 'order-cancelled', title: 'Order cancelled' },
  expired: { code: 'order-expired', title: 'Payment window closed' },
  'window-closed': { code: 'order-expired', title: 'Payment window closed' },
  final: { code: 'order-final', title: 'This order takes no payment' },
};

/** 200 with the order, or the problem the outcome is. */
function answer(outcome: PaymentOutcome, orderId: string) {
  switch (outcome.code) {
    case 'ok':
      return outcome.order;
    case 'not-found':
      throw notFound(orderId);
    case 'payment-used':
      throw new ProblemError({
        status: 409,
        code: 'payment-id-used',
        title: 'Payment id already used',
        detail: 'this payment id settled another order',
      });
    case 'settling':
      throw new ProblemError({
        status: 503,
        code: 'order-settling',
        title: 'Order still being placed',
        detail: 'the purchase is still taking its units; ask again in a moment',
        headers: { 'Retry-After': '1' },
      });
    case 'conflict': {
      const c = CONFLICT[outcome.state];
      throw new ProblemError({
        status: 409,
        ...c,
        detail: `order ${orderId} is ${outcome.order.status}${
          outcome.order.payBy ? ` (pay by ${outcome.order.payBy})` : ''
        }`,
        extensions: { order: outcome.order },
      });
    }
  }
}

export interface OrderRoutes {
  auth: Config['auth'];
  payments: Config['payments'];
  orders: OrderLookup;
  pay: Payments;
}

export function mountOrders(router: IRouter, deps: OrderRoutes): void {
  router.get('/orders/:id', async (req, res) => {
    const id = String(req.params.id);
    const admin = isAdmin(req, deps.auth.adminToken);
    const reader = admin ? { admin: true as const } : { userId: await shopperId(req, deps.auth) };
    if (!UUID.test(id)) throw notFound(id);
    const order = await deps.orders.find(id, reader);
    if (!order) throw notFound(id);
    res.json(order);
  });

  router.post('/orders/:id/pay', async (req, res) => {
    const id = String(req.params.id);
    const userId = await shopperId(req, deps.auth);
    if (!UUID.test(id)) throw notFound(id);
    const body = parseOr400(payBody, req.body ?? {}, 'payment');
    res.json(answer(await deps.pay.pay(id, body.paymentId, userId), id));
  });

  router.post('/orders/:id/cancel', async (req, res) => {
    const id = String(req.params.id);
    const userId = await shopperId(req, deps.auth);
    if (!UUID.test(id)) throw notFound(id);
    res.json(answer(await deps.pay.cancel(id, userId), id));
  });

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
    verifyWebhook(req.headers[SIGNATURE_HEADER] as string | undefined, raw, {
      secret,
      toleranceSeconds: deps.payments.webhookToleranceSeconds,
    });
    const event = parseOr400(webhookBody, req.body, 'payment notification');
    if (event.type !== 'payment.succeeded') {
      res.json({ received: true, ignored: `events of type ${event.type} change nothing` });
      return;
    }
    res.json(answer(await deps.pay.pay(event.orderId, event.paymentId), event.orderId));
  });
}
