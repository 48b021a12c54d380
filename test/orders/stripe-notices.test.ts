/**
 * Stripe pointed straight at the service: `payment_intent.succeeded` with `Stripe-Signature`
 * (signed here as Stripe signs, not with this project's code), its tolerance and several v1
 * values, the order id in the PaymentIntent's metadata, the amount received checked against
 * the order's total, and a redelivered event answered as the first was (replay-safe).
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient, problemOf } from '../support/payments.js';

const ns = useNamespace();
const STRIPE_SECRET = 'whsec_test_5cQmH2Zx9YtRw4VbN8kLpA7sDfGhJk1L';
const WEBHOOK_SECRET = 'stripe-test-notices-secret-long-enough-01';
let app: RunningApp;
let off: RunningApp;

beforeAll(async () => {
  app = await startApp(
    ns.config({ STRIPE_WEBHOOK_SECRET: STRIPE_SECRET, PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET }),
    { worker: true },
  );
  off = await startApp(ns.config({}));
});
afterAll(async () => {
  await app?.close();
  await off?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

/** Stripe's scheme: HMAC-SHA256 of "<t>.<payload>" keyed with the endpoint secret, hex. */
const stripeV1 = (payload: string, t: number, secret = STRIPE_SECRET) =>
  createHmac('sha256', secret).update(`${t}.${payload}`, 'utf8').digest('hex');

const now = () => Math.floor(Date.now() / 1_000);

/** A payment_intent.succeeded event as Stripe sends it (trimmed to its usual members). */
function succeeded(o: {
  eventId: string;
  pi: string;
  orderId?: string;
  amount: number;
  currency?: string;
}) {
  return JSON.stringify({
    id: o.eventId,
    object: 'event',
    api_version: '2024-06-20',
    created: now(),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type: 'payment_intent.succeeded',
    data: {
      object: {
        id: o.pi,
        object: 'payment_intent',
        amount: o.amount,
        amount_received: o.amount,
        currency: o.currency ?? 'eur',
        status: 'succeeded',
        latest_charge: 'ch_3PabcDEF',
        metadata: o.orderId ? { orderId: o.orderId } : {},
      },
    },
  });
}

const deliver = (body: string, signature: string | null, at = app.url) =>
  fetch(`${at}/payments/stripe`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(signature !== null && { 'stripe-signature': signature }),
    },
    body,
  });

const signed = (body: string, t = now()) => `t=${t},v1=${stripeV1(body, t)}`;

const rowOf = (orderId: string) =>
  app.rt.db
    .selectFrom('orders')
    .select(['status', 'payment_id'])
    .where('id', '=', orderId)
    .executeTakeFirst();

/** An order awaiting payment whose buyer started paying (the shop then creates Stripe's intent). */
async function startedWithIntent(amount = 4_990) {
  const p = newProduct();
  await client.seed(p, { total: 5, payWithinSeconds: 600, price: { amount, currency: 'EUR' } });
  const user = newUser();
  const o = await client.buy(p, user);
  if (!o.ok) throw new Error(o.code);
  await waitFor('the row', () => rowOf(o.orderId), 30_000, 20);
  const intent = await client.intentOf(o.orderId, user);
  return { orderId: o.orderId, intentId: intent.paymentIntentId };
}

const started = async (amount = 4_990) => (await startedWithIntent(amount)).orderId;

let n = 0;
const ids = () => ({ eventId: `evt_1Test${++n}x${ns.id}`, pi: `pi_3Test${n}x${ns.id}` });

describe('POST /payments/stripe', () => {
  it("pays the order in the PaymentIntent's metadata; one matching v1 of several is enough", async () => {
    const orderId = await started();
    const { eventId, pi } = ids();
    const body = succeeded({ eventId, pi, orderId, amount: 4_990 });
    const t = now();
    // a rotation: Stripe signs with the old and the new secret
    const header = `t=${t},v1=${stripeV1(body, t, 'whsec_the_old_one_0123456789ABCDEF')},v1=${stripeV1(body, t)},v0=abc`;
    const res = await deliver(body, header);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe('paid');
    expect(await rowOf(orderId)).toEqual({ status: 'paid', payment_id: pi });
  });

  it('refuses a wrong, tampered, stale or missing signature, changing nothing', async () => {
    const orderId = await started();
    const { eventId, pi } = ids();
    const body = succeeded({ eventId, pi, orderId, amount: 4_990 });
    const t = now();
    const cases: Array<[string | null, string, string]> = [
      [
        `t=${t},v1=${stripeV1(body, t, 'whsec_someone_else_0123456789ABCDEF')}`,
        body,
        'invalid-signature',
      ],
      [signed(body), body.replace('4990', '1'), 'invalid-signature'],
      [signed(body, t - 301), body, 'stale-signature'],
      [`t=${t}`, body, 'invalid-signature'],
      [null, body, 'invalid-signature'],
    ];
    for (const [header, sent, code] of cases) {
      const res = await deliver(sent, header);
      expect(res.status).toBe(401);
      expect((await problemOf(res)).code).toBe(code);
    }
    expect((await rowOf(orderId))?.status).toBe('awaiting_payment');
  });

  it('checks the amount received and the currency against the total (refused: 200, recorded); the right one pays', async () => {
    const orderId = await started(1_250);
    const wrong = ids();
    const short = succeeded({ ...wrong, orderId, amount: 1_000 });
    const res = await deliver(short, signed(short));
    // answered 2xx, or Stripe retries it for three days: the refusal is recorded instead
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      received: true,
      refused: { code: 'amount-mismatch', detail: expect.stringContaining('costs 1250 EUR') },
      order: { orderId, status: 'awaiting_payment' },
    });
    const usd = ids();
    const inUsd = succeeded({ ...usd, orderId, amount: 1_250, currency: 'usd' });
    expect(await (await deliver(inUsd, signed(inUsd))).json()).toMatchObject({
      refused: { code: 'amount-mismatch' },
    });
    const refusals = await app.rt.db
      .selectFrom('payment_refusals')
      .select(['payment_id', 'amount', 'currency', 'provider', 'notice_id'])
      .where('order_id', '=', orderId)
      .orderBy('id')
      .execute();
    expect(refusals).toEqual([
      {
        payment_id: wrong.pi,
        amount: '1000',
        currency: 'EUR',
        provider: 'stripe',
        notice_id: wrong.eventId,
      },
      {
        payment_id: usd.pi,
        amount: '1250',
        currency: 'USD',
        provider: 'stripe',
        notice_id: usd.eventId,
      },
    ]);
    expect((await rowOf(orderId))?.status).toBe('awaiting_payment');
    const right = ids();
    const ok = succeeded({ ...right, orderId, amount: 1_250 });
    expect((await deliver(ok, signed(ok))).status).toBe(200);
    expect((await rowOf(orderId))?.status).toBe('paid');
  });

  it('is replay-safe: a redelivered event gets its first answer, and a second event of the same payment pays nothing twice', async () => {
    const orderId = await started();
    const { eventId, pi } = ids();
    const body = succeeded({ eventId, pi, orderId, amount: 4_990 });
    const first = await deliver(body, signed(body));
    expect(first.status).toBe(200);
    const again = await deliver(body, signed(body));
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
    const other = succeeded({ eventId: `${eventId}b`, pi, orderId, amount: 4_990 });
    const second = await deliver(other, signed(other));
    expect(second.status).toBe(200);
    const events = await app.rt.db
      .selectFrom('order_events')
      .select('type')
      .where('order_id', '=', orderId)
      .execute();
    expect(events.filter((e) => e.type === 'order.paid')).toHaveLength(1);
  });

  it('acknowledges other events and payments of something else, changing nothing', async () => {
    const { eventId, pi } = ids();
    const refund = JSON.stringify({
      id: eventId,
      type: 'charge.refunded',
      data: { object: { id: 'ch_1' } },
    });
    const r1 = await deliver(refund, signed(refund));
    expect(r1.status).toBe(200);
    expect(await r1.json()).toMatchObject({ received: true });
    const other = succeeded({ eventId: `${eventId}c`, pi, amount: 100 });
    const r2 = await deliver(other, signed(other));
    expect(await r2.json()).toEqual({
      received: true,
      ignored: 'no orderId in the PaymentIntent metadata',
    });
  });

  it('refuses (200, recorded) an order whose buyer never started paying; 400 for a malformed event', async () => {
    const p = newProduct();
    await client.seed(p, { total: 2, payWithinSeconds: 600 });
    const o = await client.buy(p, newUser());
    if (!o.ok) throw new Error(o.code);
    const { eventId, pi } = ids();
    const body = succeeded({ eventId, pi, orderId: o.orderId, amount: 0 });
    const res = await deliver(body, signed(body));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ refused: { code: 'unknown-payment-intent' } });
    expect(
      await app.rt.db
        .selectFrom('payment_refusals')
        .select(['reason', 'payment_id'])
        .where('order_id', '=', o.orderId)
        .execute(),
    ).toEqual([{ reason: 'unknown-payment-intent', payment_id: pi }]);
    const bad = JSON.stringify({ id: 'evt_bad', type: 'payment_intent.succeeded', data: {} });
    expect((await deliver(bad, signed(bad))).status).toBe(400);
  });

  it("keeps Stripe's event ids apart from Standard Webhooks ids: neither takes the other's place", async () => {
    // a Standard Webhooks notice whose webhook-id is what Stripe's evt_X was kept under
    const a = await startedWithIntent();
    const x = ids();
    const squat = await client.hook(
      {
        type: 'payment.processing',
        orderId: a.orderId,
        paymentIntentId: a.intentId,
        paymentId: 'psp-squat',
      },
      { webhookId: `stripe:${x.eventId}` },
    );
    expect(await squat.json()).toMatchObject({ received: true, ignored: expect.any(String) });
    const body = succeeded({ ...x, orderId: a.orderId, amount: 4_990 });
    const res = await deliver(body, signed(body));
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(await rowOf(a.orderId)).toEqual({ status: 'paid', payment_id: x.pi });

    // and the other way: Stripe's event evt_Y first, then a Standard Webhooks notice under its key
    const b = await startedWithIntent();
    const y = ids();
    const byStripe = succeeded({ ...y, orderId: b.orderId, amount: 4_990 });
    expect((await deliver(byStripe, signed(byStripe))).status).toBe(200);
    const c = await startedWithIntent();
    const paid = await client.hook(
      {
        type: 'payment.succeeded',
        orderId: c.orderId,
        paymentIntentId: c.intentId,
        paymentId: `psp-${c.orderId}`,
        amount: 4_990,
        currency: 'EUR',
      },
      { webhookId: `stripe:${y.eventId}` },
    );
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(paid.headers.get('idempotent-replayed')).toBeNull();
    expect(await rowOf(c.orderId)).toEqual({ status: 'paid', payment_id: `psp-${c.orderId}` });
    const kept = await app.rt.db
      .selectFrom('payment_notices')
      .select(['provider', 'id'])
      .where('id', 'in', [x.eventId, `stripe:${x.eventId}`, y.eventId, `stripe:${y.eventId}`])
      .execute();
    expect(kept).toHaveLength(4);
    expect(kept).toEqual(
      expect.arrayContaining([
        { provider: 'standard-webhooks', id: `stripe:${x.eventId}` },
        { provider: 'standard-webhooks', id: `stripe:${y.eventId}` },
        { provider: 'stripe', id: x.eventId },
        { provider: 'stripe', id: y.eventId },
      ]),
    );
  });

  it('is off (503) without STRIPE_WEBHOOK_SECRET', async () => {
    const body = succeeded({ ...ids(), amount: 1 });
    const res = await deliver(body, signed(body), off.url);
    expect(res.status).toBe(503);
    expect((await problemOf(res)).code).toBe('webhook-disabled');
  });
});
