/**
 * The payment's life after `paid`, as Stripe tells it (signed as Stripe signs): a whole refund
 * makes the order `refunded` and, while the sale runs, puts its unit back on sale once (it sells
 * again; after the sale's end it stays sold); disputes open, are won (paid again) or lost
 * (`dispute_lost`), whatever order Stripe's events come in; each change is an event
 * (order.refunded, order.returned, order.disputed, order.dispute_won, order.dispute_lost);
 * what the order cannot take is answered 2xx, recorded and counted; and reconciliation stays
 * exact through all of it.
 */
import { createHmac } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProblemError } from '../../src/errors.js';
import { answer } from '../../src/http/routes/orders.js';
import { REFUSAL_REASONS, refusalOf, type PaymentOutcome } from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { reconcileOver } from '../support/orders.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';

const ns = useNamespace();
const STRIPE_SECRET = 'whsec_test_refunds_9YtRw4VbN8kLpA7sDfGhJk1L';
const WEBHOOK_SECRET = 'refunds-test-notices-secret-long-enough-01';
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(
    ns.config({
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      SWEEP_INTERVAL_MS: '300',
      SWEEP_MIN_AGE_MS: '1000',
    }),
    { worker: true },
  );
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);
const now = () => Math.floor(Date.now() / 1_000);

let n = 0;
const eventId = () => `evt_1Refund${++n}x${ns.id}`;

/** Delivers a Stripe event (signed with Stripe's scheme); its answer and body. */
async function stripe(type: string, object: Record<string, unknown>, id = eventId()) {
  const body = JSON.stringify({ id, object: 'event', type, data: { object } });
  const t = now();
  const v1 = createHmac('sha256', STRIPE_SECRET).update(`${t}.${body}`).digest('hex');
  const res = await fetch(`${app.url}/payments/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}` },
    body,
  });
  return { res, body: (await res.json()) as Record<string, unknown>, id };
}

const refunded = (pi: string, o: { amount?: number; refundedAmount?: number } = {}) => ({
  id: `ch_${pi.slice(3)}`,
  object: 'charge',
  payment_intent: pi,
  amount: o.amount ?? 1_500,
  amount_refunded: o.refundedAmount ?? o.amount ?? 1_500,
  refunded: (o.refundedAmount ?? o.amount ?? 1_500) === (o.amount ?? 1_500),
  currency: 'eur',
});

const dispute = (pi: string, status: string, id = `dp_${pi.slice(3)}`) => ({
  id,
  object: 'dispute',
  payment_intent: pi,
  charge: `ch_${pi.slice(3)}`,
  amount: 1_500,
  currency: 'eur',
  status,
});

const rowOf = (orderId: string) =>
  app.rt.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirstOrThrow();

const eventsOf = async (orderId: string) =>
  (
    await app.rt.db
      .selectFrom('order_events')
      .select(['type', 'version'])
      .where('order_id', '=', orderId)
      .orderBy('version')
      .execute()
  ).map((e) => `${e.version} ${e.type}`);

async function reconciled(productId: string) {
  await waitFor(
    'the outboxes drained',
    async () => (await reconcileOver(app.rt, productId))!.pending === 0,
    30_000,
  );
  const r = (await reconcileOver(app.rt, productId))!;
  expect(r.problems).toEqual([]);
  return r;
}

/** A sale of `total` units at 15.00 EUR with a payment window, and orders paid through Stripe. */
async function paidOrders(total: number, count: number) {
  const p = newProduct();
  await client.seed(p, { total, payWithinSeconds: 600, price: { amount: 1_500, currency: 'EUR' } });
  const paid: Array<{ orderId: string; user: string; pi: string }> = [];
  for (let i = 0; i < count; i++) {
    const user = newUser();
    const o = await client.buy(p, user);
    if (!o.ok) throw new Error(o.code);
    await client.intentOf(o.orderId, user);
    const pi = `pi_3Paid${i}x${p}`;
    const r = await stripe('payment_intent.succeeded', {
      id: pi,
      object: 'payment_intent',
      amount: 1_500,
      amount_received: 1_500,
      currency: 'eur',
      metadata: { orderId: o.orderId },
    });
    expect(r.body, JSON.stringify(r.body)).toMatchObject({ status: 'paid', paymentId: pi });
    paid.push({ orderId: o.orderId, user, pi });
  }
  return { productId: p, paid };
}

describe('a refund', () => {
  it('while the sale runs: refunded, its unit back on sale once (it sells again), its buyer may buy again', async () => {
    const { productId, paid } = await paidOrders(2, 2);
    const [a] = paid;
    expect((await client.stateOf(productId)).remaining).toBe(0);
    const first = await stripe('charge.refunded', refunded(a!.pi));
    expect(first.res.status).toBe(200);
    expect(first.body).toMatchObject({ orderId: a!.orderId, status: 'refunded', paymentId: a!.pi });
    // the same event again, and the same refund in another event: nothing more comes back
    const again = await stripe('charge.refunded', refunded(a!.pi), first.id);
    expect(again.res.headers.get('idempotent-replayed')).toBe('true');
    const other = await stripe('charge.refunded', refunded(a!.pi));
    expect(other.body).toMatchObject({ status: 'refunded' });
    await waitFor('the return', async () => (await rowOf(a!.orderId)).restocked_at, 20_000, 20);
    expect(await eventsOf(a!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.refunded',
      '4 order.returned',
    ]);
    expect(await client.stateOf(productId)).toMatchObject({ remaining: 1, returned: 1 });
    const view = await client.orderOf(a!.orderId, a!.user);
    expect(view).toMatchObject({ status: 'refunded', refundedAt: expect.any(String) });
    // the unit sells again, to its old buyer too (RETURN_FREES_LIMIT)
    const resold = await client.buy(productId, a!.user);
    expect(resold.ok).toBe(true);
    expect(await client.buy(productId, newUser())).toEqual({ ok: false, code: 'sold-out' });
    const r = await reconciled(productId);
    expect(r).toMatchObject({ returned: 1, persisted: 3, remaining: 0 });
    expect(r.held).toMatchObject({ paid: 1, awaitingPayment: 1, refunded: 0, returning: 0 });
  });

  it('after the sale ended: refunded, its unit stays sold (no order.returned), reconciliation says so', async () => {
    const { productId, paid } = await paidOrders(3, 2);
    const ended = await fetch(`${app.url}/admin/products/${productId}/end`, {
      method: 'POST',
      headers: client.admin,
    });
    expect(ended.status, await ended.clone().text()).toBe(200);
    const r = await stripe('charge.refunded', refunded(paid[0]!.pi));
    expect(r.body).toMatchObject({ status: 'refunded' });
    await waitFor(
      'the units kept',
      async () => (await rowOf(paid[0]!.orderId)).units_kept_at,
      20_000,
      20,
    );
    const row = await rowOf(paid[0]!.orderId);
    expect(row.restocked_at).toBeNull();
    expect(await eventsOf(paid[0]!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.refunded',
    ]);
    expect(await client.stateOf(productId)).toMatchObject({ remaining: 1, returned: 0 });
    const rec = await reconciled(productId);
    expect(rec).toMatchObject({ returned: 0, persisted: 2, remaining: 1 });
    expect(rec.held).toMatchObject({ paid: 1, refunded: 1, returning: 0 });
  });

  it('of a part of the payment changes nothing: refused (200), recorded, counted once', async () => {
    const { productId, paid } = await paidOrders(1, 1);
    const before = refusedCount('stripe', 'partial-refund');
    const part = await stripe('charge.refunded', refunded(paid[0]!.pi, { refundedAmount: 500 }));
    expect(part.res.status).toBe(200);
    expect(part.body).toMatchObject({
      received: true,
      refused: { code: 'partial-refund', detail: expect.stringContaining('500 EUR') },
      order: { status: 'paid' },
    });
    await stripe('charge.refunded', refunded(paid[0]!.pi, { refundedAmount: 500 }), part.id);
    expect(await refusedCount('stripe', 'partial-refund')).toBe((await before) + 1);
    expect(
      await app.rt.db
        .selectFrom('payment_refusals')
        .select(['reason', 'provider', 'notice_id', 'amount', 'expected_amount'])
        .where('order_id', '=', paid[0]!.orderId)
        .execute(),
    ).toEqual([
      {
        reason: 'partial-refund',
        provider: 'stripe',
        notice_id: part.id,
        amount: '500',
        expected_amount: '1500',
      },
    ]);
    expect((await rowOf(paid[0]!.orderId)).status).toBe('paid');
    expect((await reconciled(productId)).held.paid).toBe(1);
  });

  it('of a payment no order was paid by, or a charge without a PaymentIntent, is acknowledged and changes nothing', async () => {
    const a = await stripe('charge.refunded', refunded('pi_3NotAnOrderPayment'));
    expect(a.body).toEqual({ received: true, ignored: expect.stringContaining('no order') });
    const b = await stripe('charge.refunded', { ...refunded('pi_3X'), payment_intent: null });
    expect(b.body).toEqual({
      received: true,
      ignored: expect.stringContaining('no PaymentIntent'),
    });
  });

  it('five refund events of one payment at once: refunded once, its unit back once', async () => {
    const { productId, paid } = await paidOrders(1, 1);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => stripe('charge.refunded', refunded(paid[0]!.pi))),
    );
    expect(answers.map((a) => a.res.status)).toEqual([200, 200, 200, 200, 200]);
    await waitFor(
      'the return',
      async () => (await rowOf(paid[0]!.orderId)).restocked_at,
      20_000,
      20,
    );
    expect(await eventsOf(paid[0]!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.refunded',
      '4 order.returned',
    ]);
    expect(await client.stateOf(productId)).toMatchObject({ remaining: 1, returned: 1 });
    expect((await reconciled(productId)).returned).toBe(1);
  });
});

describe('a refund cut short', () => {
  it('by a crash between its commit and its return: the sweep returns the unit, once', async () => {
    const { productId, paid } = await paidOrders(2, 2);
    // what a process that died after the refund's commit leaves: refunded, nothing returned
    await sql`update orders set status = 'refunded', refunded_at = now()
      where id = ${paid[0]!.orderId}`.execute(app.rt.db);
    await waitFor('the sweep', async () => (await rowOf(paid[0]!.orderId)).restocked_at, 20_000);
    expect(await eventsOf(paid[0]!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.refunded',
      '4 order.returned',
    ]);
    expect(await client.stateOf(productId)).toMatchObject({ remaining: 1, returned: 1 });
    // Stripe's event of it, come late, changes nothing more
    const r = await stripe('charge.refunded', refunded(paid[0]!.pi));
    expect(r.body).toMatchObject({ status: 'refunded' });
    const rec = await reconciled(productId);
    expect(rec).toMatchObject({ returned: 1, remaining: 1 });
    expect(rec.held).toMatchObject({ paid: 1, returning: 0 });
  });
});

describe('a dispute', () => {
  it('opened, then won (paid again) or lost (dispute_lost); the units stay sold either way', async () => {
    const { productId, paid } = await paidOrders(2, 2);
    const [won, lost] = paid;
    for (const o of [won!, lost!]) {
      const opened = await stripe('charge.dispute.created', dispute(o.pi, 'needs_response'));
      expect(opened.body).toMatchObject({ status: 'disputed', disputedAt: expect.any(String) });
    }
    const mid = await reconciled(productId);
    expect(mid.held).toMatchObject({ disputed: 2, paid: 0 });
    const w = await stripe('charge.dispute.closed', dispute(won!.pi, 'won'));
    expect(w.body).toMatchObject({ status: 'paid', disputeClosedAt: expect.any(String) });
    const l = await stripe('charge.dispute.closed', dispute(lost!.pi, 'lost'));
    expect(l.body).toMatchObject({ status: 'dispute_lost' });
    // an older word of a closed dispute changes nothing
    const late = await stripe('charge.dispute.updated', dispute(lost!.pi, 'under_review'));
    expect(late.body).toEqual({ received: true, ignored: expect.stringContaining('closed') });
    expect(await eventsOf(won!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.disputed',
      '4 order.dispute_won',
    ]);
    expect(await eventsOf(lost!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.disputed',
      '4 order.dispute_lost',
    ]);
    const end = await reconciled(productId);
    expect(end).toMatchObject({ returned: 0, remaining: 0 });
    expect(end.held).toMatchObject({ paid: 1, disputeLost: 1, disputed: 0 });
  });

  it('closed before Stripe said it opened: the late opening is stale and changes nothing', async () => {
    const { paid } = await paidOrders(1, 1);
    const closed = await stripe('charge.dispute.closed', dispute(paid[0]!.pi, 'lost'));
    expect(closed.body).toMatchObject({ status: 'dispute_lost' });
    const opened = await stripe('charge.dispute.created', dispute(paid[0]!.pi, 'needs_response'));
    expect(opened.body).toMatchObject({ received: true, ignored: expect.any(String) });
    expect((await rowOf(paid[0]!.orderId)).status).toBe('dispute_lost');
    expect(await eventsOf(paid[0]!.orderId)).toEqual([
      '1 order.created',
      '2 order.paid',
      '3 order.dispute_lost',
    ]);
  });

  it('a refund of a disputed order is refused: 200, recorded, counted; the order stays disputed', async () => {
    const { paid } = await paidOrders(1, 1);
    await stripe('charge.dispute.created', dispute(paid[0]!.pi, 'needs_response'));
    const before = await refusedCount('stripe', 'order-disputed');
    const r = await stripe('charge.refunded', refunded(paid[0]!.pi));
    expect(r.res.status).toBe(200);
    expect(r.body).toMatchObject({
      received: true,
      refused: { code: 'order-disputed' },
      order: { status: 'disputed' },
    });
    expect(await refusedCount('stripe', 'order-disputed')).toBe(before + 1);
    expect(
      await app.rt.db
        .selectFrom('payment_refusals')
        .select(['reason', 'notice_id'])
        .where('order_id', '=', paid[0]!.orderId)
        .execute(),
    ).toEqual([{ reason: 'order-disputed', notice_id: r.id }]);
    expect((await rowOf(paid[0]!.orderId)).status).toBe('disputed');
  });
});

describe('a refusal', () => {
  it('is recorded and counted under the problem code POST /payments/webhook answers it with', () => {
    const order = { orderId: 'o1', status: 'paid', productId: 'p', userId: 'u' } as const;
    const outcomes: PaymentOutcome[] = [
      { code: 'payment-used' },
      { code: 'unknown-intent' },
      {
        code: 'amount-mismatch',
        order: { ...order, status: 'awaiting_payment', total: { amount: 1, currency: 'EUR' } },
        paid: { amount: 2, currency: 'EUR' },
      },
      ...(
        [
          'paid',
          'cancelled',
          'expired',
          'window-closed',
          'final',
          'refunded',
          'disputed',
          'dispute_lost',
        ] as const
      ).map((state) => ({ code: 'conflict' as const, state, order })),
    ];
    for (const outcome of outcomes) {
      const reason = refusalOf(outcome)?.reason;
      let code: string | undefined;
      try {
        answer(outcome, 'o1');
      } catch (err) {
        code = (err as ProblemError).code;
      }
      expect(reason, JSON.stringify(outcome)).toBe(code);
      expect(REFUSAL_REASONS).toContain(reason);
    }
  });
});

/** seckill_payment_notices_refused_total for `provider` and `reason` in this app's registry. */
async function refusedCount(provider: string, reason: string): Promise<number> {
  const metric = await app.rt.registry
    .getSingleMetric('seckill_payment_notices_refused_total')
    ?.get();
  const value = metric?.values.find(
    (v) => v.labels.provider === provider && v.labels.reason === reason,
  );
  return value?.value ?? 0;
}
