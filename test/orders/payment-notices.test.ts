/**
 * Only a verified payment marks an order paid: the buyer's route starts a payment (its intent)
 * and pays nothing; the provider's signed webhook settles the intent bound to that order. The
 * webhook in both signature formats (Seckill-Signature, Standard Webhooks), and a Standard
 * Webhooks redelivery answered as the first one was, changing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signStandardWebhook, signNotice, verifyNotice } from '../../src/http/notice-signature.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient, problemOf } from '../support/payments.js';
import { reconcileOver } from '../support/orders.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'webhooks-test-secret-long-enough-0123456789';
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET }), { worker: true });
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);
const { seed, buy, start, hook, orderOf } = client;

const rowOf = (orderId: string) =>
  app.rt.db
    .selectFrom('orders')
    .select(['status', 'payment_id'])
    .where('id', '=', orderId)
    .executeTakeFirst();

async function sold(productId: string, user: string) {
  const o = await buy(productId, user);
  if (!o.ok) throw new Error(o.code);
  return o.orderId;
}

/** Two buyers' orders of one product, each with the payment intent its buyer started. */
async function twoAwaitingPayment() {
  const p = newProduct();
  await seed(p, { total: 3, payWithinSeconds: 600 });
  const [a, b] = [newUser(), newUser()];
  const orderA = await sold(p, a);
  const orderB = await sold(p, b);
  const intentA = await client.intentOf(orderA, a);
  const intentB = await client.intentOf(orderB, b);
  return { p, orderA, orderB, intentA, intentB };
}

const succeeded = (orderId: string, intentId: string, paymentId: string) => ({
  type: 'payment.succeeded',
  orderId,
  paymentIntentId: intentId,
  paymentId,
});

describe('the buyer cannot pay by themselves', () => {
  it("a buyer's pay with a made-up payment id marks nothing paid (issue 26, item 2)", async () => {
    const p = newProduct();
    await seed(p, { total: 2, payWithinSeconds: 600 });
    const u = newUser();
    const orderId = await sold(p, u);
    const res = await start(orderId, u, { paymentId: 'made-up-by-the-buyer' });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    // starting to pay answers an intent, and pays nothing either
    const intent = await client.intentOf(orderId, u);
    expect(intent.orderId).toBe(orderId);
    expect((await orderOf(orderId, u)).status).toBe('awaiting_payment');
    expect((await rowOf(orderId))?.status).toBe('awaiting_payment');
    const report = (await reconcileOver(app.rt, p))!;
    expect(report.held.paid).toBe(0);
  });

  it("a squatter cannot take a victim's provider payment id: the victim's genuine webhook pays the victim (item 3)", async () => {
    const p = newProduct();
    await seed(p, { total: 2, payWithinSeconds: 600 });
    const [victim, squatter] = [newUser(), newUser()];
    const victimOrder = await sold(p, victim);
    const squatterOrder = await sold(p, squatter);
    const victimIntent = await client.intentOf(victimOrder, victim);
    // the squatter saw the victim's provider payment id and tries it on their own order
    const squat = await start(squatterOrder, squatter, { paymentId: 'psp-victim-1' });
    expect(squat.status).toBe(400);
    const squatterIntent = await client.intentOf(squatterOrder, squatter);
    // ... or forges a notice for it: unsigned, or the victim's intent with the squatter's order
    expect(
      (
        await hook(succeeded(squatterOrder, squatterIntent.paymentIntentId, 'psp-victim-1'), {
          signature: null,
        })
      ).status,
    ).toBe(401);
    const swapped = await client.paid(squatterOrder, victimIntent.paymentIntentId, 'psp-x');
    expect((await problemOf(swapped)).code).toBe('unknown-payment-intent');

    const genuine = await client.paid(victimOrder, victimIntent.paymentIntentId, 'psp-victim-1');
    expect(genuine.status).toBe(200);
    expect((await rowOf(victimOrder))?.status).toBe('paid');
    expect((await rowOf(victimOrder))?.payment_id).toBe('psp-victim-1');
    expect((await rowOf(squatterOrder))?.status).toBe('awaiting_payment');
  });
});

describe('Seckill-Signature', () => {
  it('pays on a valid signature, once; refuses forged, tampered, stale, unsigned and re-encoded signatures', async () => {
    const p = newProduct();
    await seed(p, { total: 3, payWithinSeconds: 600 });
    const u = newUser();
    const orderId = await sold(p, u);
    const intent = await client.intentOf(orderId, u);
    const body = JSON.stringify(succeeded(orderId, intent.paymentIntentId, 'wh-1'));
    const signed = (sig: string) => ({ signature: { 'seckill-signature': sig } });

    const forged = signNotice(body, 'not-the-secret-but-long-enough-000000');
    expect((await problemOf(await hook(body, signed(forged)))).code).toBe('invalid-signature');
    const tampered = body.replace('wh-1', 'wh-2');
    const good = signNotice(body, WEBHOOK_SECRET);
    expect((await problemOf(await hook(tampered, signed(good)))).code).toBe('invalid-signature');
    const stale = signNotice(body, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 301);
    expect((await problemOf(await hook(body, signed(stale)))).code).toBe('stale-signature');
    expect((await hook(body, { signature: null })).status).toBe(401);
    expect((await hook(body, signed('t=abc,v1=zz'))).status).toBe(401);
    // the right HMAC in another encoding of the same bytes: upper case, trailing junk
    const [t, v1] = good.split(',');
    // ... and a part with more than one '=': the value is all after the first
    const strays = [`${good}=junk`, `${t}=99,${v1}`, `${t},${v1}=`, `${t},v1==${v1!.slice(3)}`];
    // ... and empty or repeated parts: a trailing comma, ',,', a second t
    strays.push(`${good},`, `${t},,${v1}`, `${t},${t},${v1}`, `,${good}`);
    for (const reencoded of [`${t},${v1!.toUpperCase()}`, `${good}0`, `${good}zz`, ...strays]) {
      expect((await problemOf(await hook(body, signed(reencoded)))).code).toBe('invalid-signature');
    }
    expect((await orderOf(orderId, u)).status).toBe('awaiting_payment');

    const first = await hook(body, signed(good));
    expect(first.status).toBe(200);
    expect(((await first.json()) as { status: string }).status).toBe('paid');
    // the provider retries (or someone replays it inside the window): the same answer, no change
    const replay = await hook(body, signed(good));
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { status: string }).status).toBe('paid');
    expect(await rowOf(orderId)).toEqual({ status: 'paid', payment_id: 'wh-1' });

    const refund = JSON.stringify({
      ...succeeded(orderId, intent.paymentIntentId, 'r'),
      type: 'payment.refunded',
    });
    const ignored = await hook(refund);
    expect(ignored.status).toBe(200);
    expect((await ignored.json()) as object).toMatchObject({ received: true });
    expect((await hook('{"type":')).status).toBe(400);
    const noIntent = await hook({ type: 'payment.succeeded', orderId, paymentId: 'wh-3' });
    expect(noIntent.status).toBe(400);
    expect((await reconcileOver(app.rt, p))!.problems).toEqual([]);
  });

  it('is off (503) without PAYMENT_WEBHOOK_SECRET', async () => {
    const off = await startApp(ns.config());
    try {
      const res = await fetch(`${off.url}/payments/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(res.status).toBe(503);
      expect((await problemOf(res)).code).toBe('webhook-disabled');
    } finally {
      await off.close();
    }
  });
});

describe('Standard Webhooks', () => {
  it('pays on valid headers; refuses a bad signature, a stale timestamp and missing headers', async () => {
    const p = newProduct();
    await seed(p, { total: 2, payWithinSeconds: 600 });
    const u = newUser();
    const orderId = await sold(p, u);
    const intent = await client.intentOf(orderId, u);
    const body = JSON.stringify(succeeded(orderId, intent.paymentIntentId, 'sw-1'));
    const id = `msg_${orderId}`;

    const wrongKey = signStandardWebhook(id, body, 'another-secret-long-enough-0123456789');
    expect((await problemOf(await hook(body, { signature: wrongKey }))).code).toBe(
      'invalid-signature',
    );
    const good = signStandardWebhook(id, body, WEBHOOK_SECRET);
    const otherId = { ...good, 'webhook-id': `${id}-other` };
    expect((await problemOf(await hook(body, { signature: otherId }))).code).toBe(
      'invalid-signature',
    );
    const padded = { ...good, 'webhook-signature': `${good['webhook-signature']}=` };
    expect((await problemOf(await hook(body, { signature: padded }))).code).toBe(
      'invalid-signature',
    );
    const old = signStandardWebhook(id, body, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 301);
    expect((await problemOf(await hook(body, { signature: old }))).code).toBe('stale-signature');
    const { 'webhook-id': _, ...noId } = good;
    expect((await problemOf(await hook(body, { signature: noId }))).code).toBe('invalid-signature');
    // none of the refused deliveries was remembered: the genuine one is handled
    expect((await rowOf(orderId))?.status).toBe('awaiting_payment');

    const res = await hook(body, { signature: good });
    expect(res.status).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(((await res.json()) as { status: string }).status).toBe('paid');
    expect(await rowOf(orderId)).toEqual({ status: 'paid', payment_id: 'sw-1' });
  });

  it('a replayed webhook-id changes nothing and answers as the first did, even at once and with another body', async () => {
    const { p, orderA, orderB, intentA, intentB } = await twoAwaitingPayment();

    // five deliveries of one id at once: one is handled, four get its answer
    const id = `msg_a_${orderA}`;
    const note = succeeded(orderA, intentA.paymentIntentId, 'sw-a');
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        client.paid(orderA, intentA.paymentIntentId, 'sw-a', { webhookId: id }),
      ),
    );
    const bodies = await Promise.all(answers.map((r) => r.json()));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(4);
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(bodies[0]).toMatchObject({ orderId: orderA, status: 'paid' });

    // the same id with another (correctly signed) body: the first answer, nothing changes
    const reused = await hook({ ...note, paymentId: 'sw-a-2' }, { webhookId: id });
    expect(reused.status).toBe(200);
    expect(reused.headers.get('idempotent-replayed')).toBe('true');
    expect(await reused.json()).toEqual(bodies[0]);
    expect(await rowOf(orderA)).toEqual({ status: 'paid', payment_id: 'sw-a' });

    // a first answer that was a refusal is given again too, even once the order could be paid
    const refusedId = `msg_b_${orderB}`;
    const wrongIntent = await client.paid(orderB, intentA.paymentIntentId, 'sw-b', {
      webhookId: refusedId,
    });
    expect(wrongIntent.status).toBe(404);
    const firstProblem = await wrongIntent.json();
    const again = await client.paid(orderB, intentB.paymentIntentId, 'sw-b', {
      webhookId: refusedId,
    });
    expect(again.status).toBe(404);
    expect(again.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await again.json()).toEqual(firstProblem);
    expect((await rowOf(orderB))?.status).toBe('awaiting_payment');
    // a new delivery (new id) of the right notice pays it
    const fresh = await client.paid(orderB, intentB.paymentIntentId, 'sw-b', {
      webhookId: `${refusedId}-2`,
    });
    expect(fresh.status).toBe(200);
    await waitFor(
      'outboxes drained',
      async () => (await reconcileOver(app.rt, p))!.pending === 0,
      20_000,
    );
    const report = (await reconcileOver(app.rt, p))!;
    expect(report.problems).toEqual([]);
    expect(report.held.paid).toBe(2);
  });

  it('a payment id that already paid another order answers 409 payment-id-used in both formats, recorded and answered again (issue 37, item 1)', async () => {
    const { p, orderA, orderB, intentA, intentB } = await twoAwaitingPayment();
    expect((await client.paid(orderA, intentA.paymentIntentId, 'sw-dup')).status).toBe(200);

    // the same notice (B's intent, A's payment id), once per format
    const seckill = await client.paid(orderB, intentB.paymentIntentId, 'sw-dup');
    expect(seckill.status).toBe(409);
    expect((await problemOf(seckill)).code).toBe('payment-id-used');
    const id = `msg_dup_${orderB}`;
    const standard = await client.paid(orderB, intentB.paymentIntentId, 'sw-dup', {
      webhookId: id,
    });
    expect(standard.status).toBe(409);
    const standardProblem = await problemOf(standard);
    expect(standardProblem.code).toBe('payment-id-used');
    // the delivery is recorded: its redelivery gets the same answer, replayed
    const delivery = await app.rt.db
      .selectFrom('payment_notices')
      .select('status')
      .where('provider', '=', 'standard-webhooks')
      .where('id', '=', id)
      .executeTakeFirst();
    expect(delivery).toEqual({ status: 409 });
    const again = await client.paid(orderB, intentB.paymentIntentId, 'sw-dup', { webhookId: id });
    expect(again.status).toBe(409);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await problemOf(again)).toEqual(standardProblem);
    expect(await rowOf(orderA)).toEqual({ status: 'paid', payment_id: 'sw-dup' });
    expect(await rowOf(orderB)).toEqual({ status: 'awaiting_payment', payment_id: null });
    // B's genuine payment (a new delivery) still pays it: the refusal left the order as it was
    const paid = await client.paid(orderB, intentB.paymentIntentId, 'sw-dup-b', {
      webhookId: `${id}-2`,
    });
    expect(paid.status).toBe(200);
    expect(await rowOf(orderB)).toEqual({ status: 'paid', payment_id: 'sw-dup-b' });
  });

  it('takes a whsec_ secret as the spec says (base64 key), and the same headers verify in process', () => {
    const secret = `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`;
    const body = Buffer.from('{"type":"payment.succeeded"}');
    const headers = signStandardWebhook('msg_1', body.toString(), secret);
    const opts = { secret, toleranceSeconds: 300 };
    expect(verifyNotice(headers, body, opts)).toEqual({ webhookId: 'msg_1' });
    // the key is the base64 after whsec_: the same bytes given raw sign alike, others do not
    const raw = signStandardWebhook('msg_2', body.toString(), 'k'.repeat(32));
    expect(verifyNotice(raw, body, opts)).toEqual({ webhookId: 'msg_2' });
    const other = signStandardWebhook('msg_3', body.toString(), 'j'.repeat(32));
    expect(() => verifyNotice(other, body, opts)).toThrow(/signature/);
  });
});
