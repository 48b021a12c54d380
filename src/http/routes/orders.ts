/**
 * Orders: `GET /orders/:id` (pending, persisted, or a payment-window state), the buyer's
 * `POST /orders/:id/pay` (starts a payment: a payment intent; it pays nothing) and
 * `POST /orders/:id/cancel`; the provider's signed payment notice (payment-notices.ts) settles. Only
 * the buyer (or an admin, reading) may see an order; to anyone else it does not exist (404).
 */
import type { IRouter, Request } from 'express';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import type {
  Admission,
  AdminAccess,
  OrderLookup,
  Payments,
  PaymentOutcome,
} from '../../services/index.js';
import { admissionProblem } from '../admission-problems.js';
import { isAdmin, shopperId } from '../auth.js';
import { parseOr400 } from '../validation.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const notFound = (id: string) =>
  new ProblemError({
    status: 404,
    code: 'unknown-order',
    title: 'Unknown order',
    detail: `no order ${id}`,
  });

/** The buyer's pay route takes no payment details: it starts a payment (see mountOrders). */
export const payBody = z.strictObject({});

const paymentIdWas = () =>
  new ProblemError({
    status: 400,
    code: 'invalid-request',
    title: 'Invalid payment',
    detail:
      'paymentId is not accepted: POST /orders/:id/pay starts a payment (a payment intent) and ' +
      "only the payment provider's signed webhook marks the order paid",
  });

const CONFLICT: Record<
  Extract<PaymentOutcome, { code: 'conflict' }>['state'],
  { code: string; title: string }
> = {
  paid: { code: 'order-paid', title: 'Order already paid' },
  cancelled: { code: 'order-cancelled', title: 'Order cancelled' },
  expired: { code: 'order-expired', title: 'Payment window closed' },
  'window-closed': { code: 'order-expired', title: 'Payment window closed' },
  final: { code: 'order-final', title: 'This order takes no payment' },
  refunded: { code: 'order-refunded', title: 'Order refunded' },
  disputed: { code: 'order-disputed', title: 'Order disputed' },
  dispute_lost: { code: 'order-dispute-lost', title: 'Dispute lost' },
};

/** 200 with the order, or the problem the outcome is. */
export function answer(outcome: PaymentOutcome, orderId: string) {
  switch (outcome.code) {
    case 'ok':
      return outcome.order;
    case 'not-found':
      throw notFound(orderId);
    case 'unknown-intent':
      throw new ProblemError({
        status: 404,
        code: 'unknown-payment-intent',
        title: 'Unknown payment intent',
        detail: `no payment intent of order ${orderId} has that id`,
      });
    case 'payment-used':
      throw new ProblemError({
        status: 409,
        code: 'payment-id-used',
        title: 'Payment id already used',
        detail: 'this payment id settled another order',
      });
    case 'amount-mismatch': {
      const { paid, order } = outcome;
      const named =
        paid.amount === undefined
          ? 'names no amount'
          : `pays ${paid.amount} ${paid.currency ?? ''}`;
      throw new ProblemError({
        status: 409,
        code: 'amount-mismatch',
        title: "Payment does not match the order's total",
        detail: `the notice ${named.trim()}; order ${orderId} costs ${order.total!.amount} ${order.total!.currency}: nothing was paid (recorded for a refund)`,
        extensions: { order },
      });
    }
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
  /** an admin may read any order (the bearer token, throttled) */
  access: AdminAccess;
  orders: OrderLookup;
  pay: Payments;
  /** RATE_LIMIT_ORDERS per shopper */
  admission: Pick<Admission, 'limitOrders'>;
}

/**
 * The shopper's identity, once the order routes' rate limit let the request through (the
 * RateLimit headers go with the 429 only: these routes answer many problems, all lookups).
 */
async function limitedShopper(req: Request, deps: OrderRoutes): Promise<string> {
  const userId = await shopperId(req, deps.auth);
  const limited = await deps.admission.limitOrders(userId);
  if (limited.refusal) throw admissionProblem(limited.refusal);
  return userId;
}

export function mountOrders(router: IRouter, deps: OrderRoutes): void {
  router.get('/orders/:id', async (req, res) => {
    const id = String(req.params.id);
    const admin = await isAdmin(req, deps.auth, deps.access);
    const reader = admin ? { admin: true as const } : { userId: await limitedShopper(req, deps) };
    if (!UUID.test(id)) throw notFound(id);
    const order = await deps.orders.find(id, reader);
    if (!order) throw notFound(id);
    res.json(order);
  });

  // Starts (or answers again) the order's payment: 201 a new intent, 200 the same one again.
  router.post('/orders/:id/pay', async (req, res) => {
    const id = String(req.params.id);
    const userId = await limitedShopper(req, deps);
    if (!UUID.test(id)) throw notFound(id);
    const body: unknown = req.body ?? {};
    if (typeof body === 'object' && body !== null && 'paymentId' in body) throw paymentIdWas();
    parseOr400(payBody, body, 'payment');
    const r = await deps.pay.start(id, userId);
    if (r.code !== 'started') return void answer(r, id);
    res.status(r.created ? 201 : 200).json(r.intent);
  });

  router.post('/orders/:id/cancel', async (req, res) => {
    const id = String(req.params.id);
    const userId = await limitedShopper(req, deps);
    if (!UUID.test(id)) throw notFound(id);
    res.json(answer(await deps.pay.cancel(id, userId), id));
  });
}
