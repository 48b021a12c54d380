/**
 * A shopper's and the payment provider's side of the payment routes, through the real API: buy,
 * start paying (the order's payment intent), and the provider's signed notice that it was paid.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { signStandardWebhook, signNotice } from '../../src/http/notice-signature.js';
import { deadlineOf } from './cli.js';

export const newProduct = () => `p${randomBytes(4).toString('hex')}`;
export const newUser = () => `u${randomBytes(5).toString('hex')}`;

/**
 * Asks again while the service answers 503 (a store mid-spill: the client is told to retry),
 * 20 ms apart, for at most `timeoutMs`.
 */
export async function pastUnavailable(
  what: string,
  ask: () => Promise<Response>,
  timeoutMs = 20_000,
): Promise<Response> {
  const overdue = deadlineOf(`${what} past its 503s`, timeoutMs);
  let res = await ask();
  while (res.status === 503) {
    overdue();
    await new Promise((r) => setTimeout(r, 20));
    res = await ask();
  }
  return res;
}

export interface Intent {
  paymentIntentId: string;
  orderId: string;
  quantity: number;
  expiresAt: string;
}

export async function problemOf(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { type: string; status: number };
  expect(body.status).toBe(res.status);
  return { ...body, code: body.type.replace('urn:seckill:problem:', '') };
}

export function paymentClient(base: () => string, webhookSecret: string, adminToken: string) {
  const admin = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };

  const post = (path: string, user: string | undefined, body?: unknown) =>
    fetch(`${base()}${path}`, {
      method: 'POST',
      headers: {
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...(user !== undefined && { 'x-user-id': user }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });

  /** The provider's notice, signed with Seckill-Signature or (`webhookId`) Standard Webhooks. */
  const hook = (
    note: Record<string, unknown> | string,
    o: { webhookId?: string; signature?: Record<string, string> | null } = {},
  ) => {
    const body = typeof note === 'string' ? note : JSON.stringify(note);
    const signature =
      o.signature !== undefined
        ? (o.signature ?? {})
        : o.webhookId !== undefined
          ? signStandardWebhook(o.webhookId, body, webhookSecret)
          : { 'seckill-signature': signNotice(body, webhookSecret) };
    return fetch(`${base()}/payments/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signature },
      body,
    });
  };

  const client = {
    admin,
    post,
    hook,
    async seed(productId: string, body: Record<string, unknown>) {
      const res = await fetch(`${base()}/admin/products/${productId}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ strategy: 'segmented', segments: 4, ...body }),
      });
      expect(res.status, await res.clone().text()).toBe(201);
    },
    /** A purchase of one unit, retried while busy (503, lock timeout). */
    async buy(productId: string, user: string, at = base()) {
      const overdue = deadlineOf(`an answer but busy for ${user}`, 50_000);
      for (;;) {
        overdue();
        const res = await fetch(`${at}/seckill`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user-id': user },
          body: JSON.stringify({ productId, quantity: 1 }),
        });
        const body = (await res.json()) as { orderId?: string; type?: string };
        if (res.status === 202) return { ok: true as const, orderId: body.orderId! };
        const code = body.type?.replace('urn:seckill:problem:', '');
        if (res.status === 503 || code === 'lock-timeout') continue;
        return { ok: false as const, code: code! };
      }
    },
    /** The buyer's POST /orders/:id/pay (starts paying; answers the intent). */
    start: (orderId: string, user: string | undefined, body?: unknown) =>
      post(`/orders/${orderId}/pay`, user, body),
    /** Starts paying, retried while the order is still settling; the intent. */
    async intentOf(orderId: string, user: string): Promise<Intent> {
      const overdue = deadlineOf(`a payment intent for ${orderId}`, 50_000);
      for (;;) {
        overdue();
        const res = await client.start(orderId, user);
        if (res.status === 503) continue;
        expect([200, 201], await res.clone().text()).toContain(res.status);
        return (await res.json()) as Intent;
      }
    },
    /** The provider's payment.succeeded for the order's intent. */
    paid: (
      orderId: string,
      intentId: string,
      paymentId = `psp-${orderId}`,
      o: { webhookId?: string } = {},
    ) => hook({ type: 'payment.succeeded', orderId, paymentIntentId: intentId, paymentId }, o),
    /**
     * The buyer starts paying and the provider pays it at once: the webhook's answer, or the
     * start's when it refused (e.g. 409: the window closed first).
     */
    async pay(orderId: string, user: string, paymentId?: string) {
      const started = await pastUnavailable('starting to pay', () => client.start(orderId, user));
      if (started.status !== 200 && started.status !== 201) return started;
      const intent = (await started.json()) as Intent;
      return client.paid(orderId, intent.paymentIntentId, paymentId);
    },
    cancel: (orderId: string, user: string | undefined) => post(`/orders/${orderId}/cancel`, user),
    async orderOf(orderId: string, user: string) {
      const res = await fetch(`${base()}/orders/${orderId}`, { headers: { 'x-user-id': user } });
      expect(res.status).toBe(200);
      return (await res.json()) as { status: string; payBy?: string; deductedAt?: string };
    },
    async stateOf(productId: string) {
      const res = await fetch(`${base()}/admin/products/${productId}`, { headers: admin });
      return (await res.json()) as { remaining: number; sold: number; returned: number };
    },
  };
  return client;
}
