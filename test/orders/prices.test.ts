/**
 * Prices: a seed may price its sale; each order copies the unit price, currency and total of
 * its sale epoch as its row is written (a reseed at another price touches no order sold before);
 * the payment intent carries the total, and a provider's notice that pays another amount or
 * currency is refused (409, nothing paid, recorded for a refund) in both signature formats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient, problemOf } from '../support/payments.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'prices-test-secret-long-enough-0123456789';
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET }), { worker: true });
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

const put = (productId: string, body: unknown, query = '') =>
  fetch(`${app.url}/admin/products/${productId}${query}`, {
    method: 'PUT',
    headers: client.admin,
    body: JSON.stringify(body),
  });

const rowOf = (orderId: string) =>
  app.rt.db
    .selectFrom('orders')
    .select(['status', 'unit_amount', 'currency', 'total_amount', 'payment_id'])
    .where('id', '=', orderId)
    .executeTakeFirst();

async function buy(productId: string, user: string, quantity = 1) {
  const overdue = deadlineOf(`an answer but 503 for ${user}`, 50_000);
  for (;;) {
    overdue();
    const res = await fetch(`${app.url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': user },
      body: JSON.stringify({ productId, quantity }),
    });
    if (res.status === 503) continue;
    expect(res.status, await res.clone().text()).toBe(202);
    return ((await res.json()) as { orderId: string }).orderId;
  }
}

/** The order once its row is written (the worker's insert). */
async function persisted(orderId: string, user: string) {
  await waitFor(
    `the row of ${orderId}`,
    async () => (await rowOf(orderId)) !== undefined,
    30_000,
    20,
  );
  return (await client.orderOf(orderId, user)) as Record<string, unknown>;
}

describe('a seed with a price', () => {
  it.each([
    ['a currency that is no ISO 4217 code', { amount: 100, currency: 'EURO' }],
    ['a currency in lower case', { amount: 100, currency: 'eur' }],
    ['a made-up currency', { amount: 100, currency: 'ABC' }],
    ['a negative amount', { amount: -1, currency: 'EUR' }],
    ['a fractional amount', { amount: 19.99, currency: 'EUR' }],
    ['an amount past the bound', { amount: 1e13, currency: 'EUR' }],
    ['no currency', { amount: 100 }],
    ['an unknown member', { amount: 100, currency: 'EUR', tax: 1 }],
  ])('refuses %s (400, nothing seeded)', async (_, price) => {
    const p = newProduct();
    const res = await put(p, { total: 5, strategy: 'segmented', segments: 2, price });
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('invalid-request');
    expect((await fetch(`${app.url}/products/${p}`)).status).toBe(404);
    const prices = await app.rt.db
      .selectFrom('sale_prices')
      .select('epoch')
      .where('product_id', '=', p)
      .execute();
    expect(prices).toEqual([]);
  });

  it('shows the price on the product, and each order keeps the price it was sold at through a reseed', async () => {
    const p = newProduct();
    const seeded = await put(p, {
      total: 10,
      strategy: 'segmented',
      segments: 2,
      limitPerUser: 3,
      price: { amount: 1999, currency: 'EUR' },
    });
    expect(seeded.status).toBe(201);
    const product = (await (await fetch(`${app.url}/products/${p}`)).json()) as {
      price: unknown;
    };
    expect(product.price).toEqual({ amount: 1999, currency: 'EUR' });

    const alice = newUser();
    const first = await buy(p, alice, 2);
    const view = await persisted(first, alice);
    expect(view.price).toEqual({ amount: 1999, currency: 'EUR' });
    expect(view.total).toEqual({ amount: 3998, currency: 'EUR' });
    expect(await rowOf(first)).toMatchObject({
      unit_amount: '1999',
      currency: 'EUR',
      total_amount: '3998',
    });

    // the price changes with a reseed (a new epoch): the order sold before keeps its own
    const reseeded = await put(
      p,
      { total: 10, strategy: 'segmented', segments: 2, price: { amount: 500, currency: 'JPY' } },
      '?force=true',
    );
    expect(reseeded.status).toBe(200);
    const bob = newUser();
    const second = await buy(p, bob);
    expect((await persisted(second, bob)).total).toEqual({ amount: 500, currency: 'JPY' });
    expect((await client.orderOf(first, alice)) as Record<string, unknown>).toMatchObject({
      price: { amount: 1999, currency: 'EUR' },
      total: { amount: 3998, currency: 'EUR' },
    });
    expect(await rowOf(first)).toMatchObject({ unit_amount: '1999', total_amount: '3998' });

    // and a reseed without a price leaves the product, and its next orders, unpriced
    await put(p, { total: 10, strategy: 'segmented', segments: 2 }, '?force=true');
    expect(
      ((await (await fetch(`${app.url}/products/${p}`)).json()) as { price: unknown }).price,
    ).toBeNull();
    const carol = newUser();
    const third = await persisted(await buy(p, carol), carol);
    expect(third.price).toBeUndefined();
    expect(third.total).toBeUndefined();
  });
});

describe('a payment notice is checked against the order total', () => {
  async function awaiting() {
    const p = newProduct();
    await client.seed(p, {
      total: 5,
      payWithinSeconds: 600,
      price: { amount: 2500, currency: 'EUR' },
    });
    const user = newUser();
    const orderId = await buy(p, user);
    const intent = (await client.intentOf(orderId, user)) as unknown as Record<string, unknown>;
    return { orderId, user, intentId: intent.paymentIntentId as string, intent };
  }

  const notice = (orderId: string, intentId: string, n: number, extra: object) => ({
    type: 'payment.succeeded',
    orderId,
    paymentIntentId: intentId,
    paymentId: `psp-${n}-${orderId}`,
    ...extra,
  });

  const refusals = (orderId: string) =>
    app.rt.db
      .selectFrom('payment_refusals')
      .select(['reason', 'amount', 'currency', 'expected_amount', 'expected_currency'])
      .where('order_id', '=', orderId)
      .execute();

  it('the intent carries the total: what the provider charges', async () => {
    const { intent } = await awaiting();
    expect(intent).toMatchObject({ amount: 2500, currency: 'EUR', quantity: 1 });
  });

  it.each([
    ['Seckill-Signature', {}],
    ['Standard Webhooks', { webhookId: 'msg_' }],
  ])(
    'refuses another amount, another currency and no amount (409, nothing paid, recorded): %s',
    async (_, format) => {
      const { orderId, intentId, user } = await awaiting();
      const o = (n: number) =>
        'webhookId' in format ? { webhookId: `${format.webhookId}${orderId}-${n}` } : {};
      const wrong = [{ amount: 2499, currency: 'EUR' }, { amount: 2500, currency: 'USD' }, {}];
      for (const [n, extra] of wrong.entries()) {
        const res = await client.hook(notice(orderId, intentId, n, extra), o(n));
        expect(res.status).toBe(409);
        const problem = (await problemOf(res)) as { code: string; detail?: string };
        expect(problem.code).toBe('amount-mismatch');
        expect(problem.detail).toContain('2500 EUR');
        expect((await rowOf(orderId))?.status).toBe('awaiting_payment');
      }
      expect(
        (await refusals(orderId)).map((r) => [r.amount, r.currency, r.expected_amount]),
      ).toEqual(
        expect.arrayContaining([
          ['2499', 'EUR', '2500'],
          ['2500', 'USD', '2500'],
          [null, null, '2500'],
        ]),
      );
      expect(await refusals(orderId)).toHaveLength(3);
      // the right total (a provider's lower-case currency too) pays it
      const ok = await client.hook(
        notice(orderId, intentId, 9, { amount: 2500, currency: 'eur' }),
        o(9),
      );
      expect(ok.status, await ok.clone().text()).toBe(200);
      expect((await rowOf(orderId))?.status).toBe('paid');
      expect((await client.orderOf(orderId, user)).status).toBe('paid');
    },
  );

  it('an unpriced order is paid by a notice that names no amount, as before', async () => {
    const p = newProduct();
    await client.seed(p, { total: 2, payWithinSeconds: 600 });
    const user = newUser();
    const orderId = await buy(p, user);
    const intent = await client.intentOf(orderId, user);
    expect(intent).not.toHaveProperty('amount');
    const res = await client.paid(orderId, intent.paymentIntentId);
    expect(res.status).toBe(200);
    expect(await rowOf(orderId)).toMatchObject({ status: 'paid', total_amount: null });
  });
});
