/**
 * Payment windows through the real API, worker, Redis and PostgreSQL: pay, cancel, expiry (job
 * and sweep), the webhook's signature, and units that come back exactly once.
 */
import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireOrder, expiryJobId, returnUnits, sweepPayments } from '../../src/orders/index.js';
import { OrderStore, restock } from '../../src/inventory/index.js';
import { paymentWindowDeps } from '../../src/composition/roles.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor as waitForMs } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import {
  newProduct,
  newUser,
  pastUnavailable,
  paymentClient,
  problemOf,
} from '../support/payments.js';
import { reconcileOver } from '../support/orders.js';

const ns = useNamespace();
const waitFor = <T>(what: string, probe: () => Promise<T>, timeoutMs = 20_000) =>
  waitForMs(what, probe, timeoutMs);
const WEBHOOK_SECRET = 'a-webhook-secret-long-enough-0123456789';
let app: RunningApp;
/** a second API process (its own catalogue): restock notices must reach it */
let other: RunningApp;

beforeAll(async () => {
  const env = {
    PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    SWEEP_INTERVAL_MS: '300',
    SWEEP_MIN_AGE_MS: '1000',
  };
  app = await startApp(ns.config(env), { worker: true });
  other = await startApp(ns.config(env));
});
afterAll(async () => {
  await other?.close();
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);
const { admin, seed, buy, start, pay, cancel, orderOf, stateOf } = client;
/** the provider's signed notice that an intent was paid */
const settle = client.paid;

const rowsOf = (productId: string) =>
  app.rt.db
    .selectFrom('orders')
    .select(['id', 'status', 'quantity', 'restocked_at', 'user_id'])
    .where('product_id', '=', productId)
    .execute();

async function reconciled(productId: string) {
  const r = (await reconcileOver(app.rt, productId))!;
  expect(r.problems).toEqual([]);
  return r;
}

describe('start paying, the provider pays, the buyer cancels', () => {
  it('one intent per order; the provider pays once per payment id; what no longer awaits payment is refused; others see nothing', async () => {
    const p = newProduct();
    await seed(p, { total: 4, payWithinSeconds: 600 });
    const [a, b, c] = [newUser(), newUser(), newUser()];
    const ordA = await buy(p, a);
    const ordB = await buy(p, b);
    expect(ordA.ok && ordB.ok).toBe(true);
    if (!ordA.ok || !ordB.ok) return;

    // at once: the order may still be only in its outbox; payBy is there either way
    const before = await orderOf(ordA.orderId, a);
    expect(['pending', 'awaiting_payment']).toContain(before.status);
    expect(Date.parse(before.payBy!) - Date.parse(before.deductedAt!)).toBe(600_000);

    // starting to pay answers the order's intent (the same one again), and pays nothing
    const first = await start(ordA.orderId, a);
    expect(first.status).toBe(201);
    const intentA = (await first.json()) as { paymentIntentId: string; expiresAt: string };
    expect(intentA).toMatchObject({
      orderId: ordA.orderId,
      quantity: 1,
      status: 'requires_payment',
    });
    expect(intentA.expiresAt).toBe(before.payBy);
    const second = await start(ordA.orderId, a);
    expect(second.status).toBe(200);
    expect(((await second.json()) as { paymentIntentId: string }).paymentIntentId).toBe(
      intentA.paymentIntentId,
    );
    expect((await orderOf(ordA.orderId, a)).status).toBe('awaiting_payment');

    const done = await settle(ordA.orderId, intentA.paymentIntentId, 'pay-A1');
    expect(done.status).toBe(200);
    expect(((await done.json()) as { status: string }).status).toBe('paid');
    // the same payment again: the same answer
    const again = await settle(ordA.orderId, intentA.paymentIntentId, 'pay-A1');
    expect(again.status).toBe(200);
    expect(((await again.json()) as { status: string }).status).toBe('paid');
    // another payment, a new start, or a cancel, of a paid order: 409
    const otherPayment = await settle(ordA.orderId, intentA.paymentIntentId, 'pay-A2');
    expect((await problemOf(otherPayment)).code).toBe('order-paid');
    expect((await problemOf(await start(ordA.orderId, a))).code).toBe('order-paid');
    expect((await problemOf(await cancel(ordA.orderId, a))).code).toBe('order-paid');
    // a provider payment id settles one order
    const intentB = await client.intentOf(ordB.orderId, b);
    const reused = await settle(ordB.orderId, intentB.paymentIntentId, 'pay-A1');
    expect((await problemOf(reused)).code).toBe('payment-id-used');

    // someone else's order does not exist for them
    expect((await cancel(ordB.orderId, c)).status).toBe(404);
    expect((await start(ordB.orderId, c)).status).toBe(404);
    expect((await orderOf(ordB.orderId, b)).status).toBe('awaiting_payment');

    // cancel twice: one return; then its intent cannot be paid
    const cancelled = await cancel(ordB.orderId, b);
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as { status: string }).status).toBe('cancelled');
    expect((await cancel(ordB.orderId, b)).status).toBe(200);
    const late = await settle(ordB.orderId, intentB.paymentIntentId, 'pay-B');
    expect((await problemOf(late)).code).toBe('order-cancelled');
    expect((await problemOf(await start(ordB.orderId, b))).code).toBe('order-cancelled');
    await waitFor('the cancelled unit back', async () => (await stateOf(p)).returned === 1);
    expect((await stateOf(p)).remaining).toBe(3); // 4 - 2 sold + 1 returned

    // the policy: a buyer whose order was cancelled may buy again
    const rebuy = await buy(p, b);
    expect(rebuy.ok).toBe(true);
    await waitFor('persisted', async () => (await rowsOf(p)).length === 3);
    const r = await reconciled(p);
    expect(r.returned).toBe(1);
    expect(r.held).toEqual({
      final: 0,
      awaitingPayment: 1,
      paid: 1,
      returning: 0,
      refunded: 0,
      disputed: 0,
      disputeLost: 0,
    });
    const rows = await rowsOf(p);
    expect(rows.filter((x) => x.status === 'cancelled' && x.restocked_at)).toHaveLength(1);
  });

  it('paying right after the purchase succeeds while the worker persists the order meanwhile', async () => {
    const p = newProduct();
    const n = 150;
    await seed(p, { total: n, payWithinSeconds: 600 });
    const answers = await Promise.all(
      Array.from({ length: n }, async () => {
        const u = newUser();
        const o = await buy(p, u);
        if (!o.ok) return o.code;
        return (await pay(o.orderId, u, `now-${o.orderId}`)).status;
      }),
    );
    expect(answers.filter((a) => a === 200)).toHaveLength(n);
    const rows = await rowsOf(p);
    expect(rows.filter((r) => r.status === 'paid')).toHaveLength(n);
    await waitFor('outboxes drained', async () => (await reconcileOver(app.rt, p))!.pending === 0);
    expect((await reconciled(p)).held.paid).toBe(n);
  });

  it('answers bad input with a 4xx problem and changes nothing', async () => {
    const p = newProduct();
    await seed(p, { total: 2, payWithinSeconds: 600 });
    const u = newUser();
    const o = await buy(p, u);
    if (!o.ok) throw new Error(o.code);
    const cases: Array<[Promise<Response>, number]> = [
      [start(o.orderId, undefined), 401],
      [start(o.orderId, u, { paymentId: 'made-up' }), 400],
      [start(o.orderId, u, { extra: 1 }), 400],
      [start(o.orderId, u, []), 400],
      [start('not-a-uuid', u), 404],
      [cancel('00000000-0000-7000-8000-000000000000', u), 404],
    ];
    for (const [res, status] of cases) {
      const r = await res;
      expect(r.status).toBe(status);
      await problemOf(r);
    }
    const form = await fetch(`${app.url}/orders/${o.orderId}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-user-id': u },
      body: 'paymentId=1',
    });
    expect(form.status).toBe(415);
    expect((await orderOf(o.orderId, u)).status).toMatch(/pending|awaiting_payment/);
    const intents = app.rt.db.selectFrom('payment_intents').selectAll();
    expect(await intents.where('order_id', '=', o.orderId).execute()).toEqual([]);
    expect((await stateOf(p)).returned).toBe(0);
  });

  it('a final sale takes no payment, and its seed refuses a bad window', async () => {
    const p = newProduct();
    await seed(p, { total: 1 });
    const u = newUser();
    const o = await buy(p, u);
    if (!o.ok) throw new Error(o.code);
    await waitFor('persisted', async () => (await rowsOf(p)).length === 1);
    expect((await problemOf(await start(o.orderId, u))).code).toBe('order-final');
    expect((await orderOf(o.orderId, u)).status).toBe('persisted');
    for (const payWithinSeconds of [0, -1, 1.5, '60', 604_801]) {
      const res = await fetch(`${app.url}/admin/products/${newProduct()}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ total: 1, strategy: 'global', payWithinSeconds }),
      });
      expect(res.status).toBe(400);
    }
  });
});

describe('expiry', () => {
  it('pay vs expire at the deadline: every order ends paid or expired, and the expired ones come back', async () => {
    const p = newProduct();
    const n = 200;
    // 20 s: the buyers who pay at once finish well before the deadline even on a machine so loaded
    // that 200 purchases and their payment starts take seconds (5 s once left none paid in CI)
    await seed(p, { total: n, payWithinSeconds: 20, limitPerUser: 1 });
    const users = Array.from({ length: n }, newUser);
    const orders = await Promise.all(users.map((u) => buy(p, u)));
    expect(orders.every((o) => o.ok)).toBe(true);
    // each buyer starts paying at once; the provider's notice is sent around its order's deadline
    // (Redis and PostgreSQL share this machine's clock)
    const answers = await Promise.all(
      orders.map(async (o, i) => {
        const id = (o as { orderId: string }).orderId;
        const started = await pastUnavailable('starting to pay', () => start(id, users[i]!));
        if (started.status !== 201) return { id, status: started.status };
        const intent = (await started.json()) as { paymentIntentId: string; expiresAt: string };
        // most within 25 ms of it; by construction a few at once and a few after, so both
        // outcomes occur however slow the machine is
        const offset = i % 20 === 0 ? -Infinity : i % 20 === 10 ? 500 : ((i % 11) - 5) * 5;
        const at = Date.parse(intent.expiresAt) + offset;
        // the scenario: the notice lands at its offset from the window's end
        await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
        // a provider redelivers a notice answered 5xx (a store that did not answer in time)
        const res = await pastUnavailable('the notice', () =>
          settle(id, intent.paymentIntentId, `race-${id}`),
        );
        return { id, status: res.status };
      }),
    );
    await waitFor(
      'no order awaiting payment',
      async () => (await rowsOf(p)).every((r) => r.status !== 'awaiting_payment'),
      30_000,
    );
    await waitFor('every expired order returned', async () =>
      (await rowsOf(p)).every((r) => r.status !== 'expired' || r.restocked_at),
    );
    const rows = new Map((await rowsOf(p)).map((r) => [r.id, r.status]));
    const paid = [...rows.values()].filter((s) => s === 'paid').length;
    const expired = [...rows.values()].filter((s) => s === 'expired').length;
    expect(paid + expired).toBe(n);
    // the answer each payer got is the order's final state
    for (const a of answers) expect(rows.get(a.id)).toBe(a.status === 200 ? 'paid' : 'expired');
    expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([]);
    // both sides of the deadline occurred
    const tally = JSON.stringify({ paid, expired, answers: answers.map((a) => a.status) });
    expect(paid, tally).toBeGreaterThan(0);
    expect(expired, tally).toBeGreaterThan(0);
    const state = await stateOf(p);
    expect(state.returned).toBe(expired);
    expect(state.remaining).toBe(expired);
    const r = await reconciled(p);
    expect(r.held).toEqual({
      final: 0,
      awaitingPayment: 0,
      paid,
      returning: 0,
      refunded: 0,
      disputed: 0,
      disputeLost: 0,
    });
  });

  it('the sweep expires an order whose delayed job was removed', async () => {
    const p = newProduct();
    await seed(p, { total: 1, payWithinSeconds: 1 });
    const u = newUser();
    const o = await buy(p, u);
    if (!o.ok) throw new Error(o.code);
    const jobId = expiryJobId(o.orderId);
    await waitFor('its expiry job', async () => (await app.queue.getJob(jobId)) !== undefined);
    await app.queue.remove(jobId);
    expect(await app.queue.getJob(jobId)).toBeUndefined();
    await waitFor('expired by the sweep', async () => {
      const [row] = await rowsOf(p);
      return row?.status === 'expired' && row.restocked_at !== null;
    });
    expect((await stateOf(p)).remaining).toBe(1);
    await reconciled(p);
  });

  it('a return retried after a crash puts the units back once', async () => {
    const p = newProduct();
    await seed(p, { total: 2, payWithinSeconds: 600 });
    const [a, b] = [newUser(), newUser()];
    const oa = await buy(p, a);
    const ob = await buy(p, b);
    if (!oa.ok || !ob.ok) throw new Error('not sold');
    await waitFor('persisted', async () => (await rowsOf(p)).length === 2);
    const deps = paymentWindowDeps(app.rt);
    // a: the worker expired it, then crashed before the restock (a committed transition only)
    await sql`update orders set status = 'expired', pay_by = now() - interval '1 hour',
      closed_at = now() - interval '1 hour' where id = ${oa.orderId}`.execute(app.rt.db);
    // b: it crashed after the restock, before recording it (restocked_at still null)
    await sql`update orders set status = 'cancelled', closed_at = now() - interval '1 hour'
      where id = ${ob.orderId}`.execute(app.rt.db);
    const rowB = (await app.rt.db
      .selectFrom('orders')
      .selectAll()
      .where('id', '=', ob.orderId)
      .executeTakeFirstOrThrow())!;
    const k = app.rt.keys.segment(p, rowB.segment);
    const home = app.rt.keys.segment(p, rowB.home_segment);
    const returnedB = { ...rowB, orderId: rowB.id, userId: rowB.user_id };
    expect((await restock(app.rt.redis, k, home, returnedB)).code).toBe('restocked');
    // retried: by the sweep, by a redelivered job, twice at once
    const rowA = (await app.rt.db
      .selectFrom('orders')
      .selectAll()
      .where('id', '=', oa.orderId)
      .executeTakeFirstOrThrow())!;
    await Promise.all([
      sweepPayments(deps, 0),
      returnUnits(deps, rowA),
      returnUnits(deps, rowA),
      returnUnits(deps, rowB),
    ]);
    await sweepPayments(deps, 0);
    const state = await stateOf(p);
    expect(state.returned).toBe(2);
    expect(state.remaining).toBe(2);
    expect((await rowsOf(p)).every((r) => r.restocked_at !== null)).toBe(true);
    await reconciled(p);
  });
  it('an expiry job cut off from Redis mid-return finishes that return when retried, before any sweep', async () => {
    const p = newProduct();
    await seed(p, { total: 1, payWithinSeconds: 600 });
    const o = await buy(p, newUser());
    if (!o.ok) throw new Error(o.code);
    await waitFor('persisted', async () => (await rowsOf(p)).length === 1);
    await sql`update orders set pay_by = now() where id = ${o.orderId}`.execute(app.rt.db);
    // the first try: PostgreSQL's transition commits, then its Redis connection is gone
    // a client of its own (one Redis or a cluster), then quit: its commands fail unsent ('closed';
    // a cluster client that has also dropped its startup nodes says none is available)
    const cut = (app.rt.redis as Redis).duplicate();
    await cut.ping();
    await cut.quit();
    const deps = paymentWindowDeps(app.rt);
    const cutOff = { ...deps, units: new OrderStore(cut, app.rt.keys) };
    await expect(expireOrder(cutOff, o.orderId)).rejects.toThrow(
      /^(Connection is closed\.|None of startup nodes is available)$/,
    );
    expect((await rowsOf(p))[0]).toMatchObject({ status: 'expired', restocked_at: null });
    // keep the sweep (SWEEP_MIN_AGE_MS after closed_at) away: only the retry may finish it
    await sql`update orders set closed_at = now() + interval '1 hour' where id = ${o.orderId}`.execute(
      app.rt.db,
    );
    expect(await expireOrder(deps, o.orderId)).toBe('returned');
    expect((await rowsOf(p))[0]!.restocked_at).not.toBeNull();
    const state = await stateOf(p);
    expect(state.returned).toBe(1);
    expect(state.remaining).toBe(1);
    // a third delivery changes nothing
    expect(await expireOrder(deps, o.orderId)).toBe('expired');
    expect((await stateOf(p)).returned).toBe(1);
    await reconciled(p);
  });
});

describe('returned units sell again', () => {
  it('with buyers who never pay, every unit ends paid: paid == stock, nothing oversold', async () => {
    const p = newProduct();
    const total = 20;
    await seed(p, { total, payWithinSeconds: 1, limitPerUser: 1 });
    let paid = 0;
    let sold = 0;
    let soldAgain = false;
    const refusals = new Set<string>();
    const bases = [app.url, other.url];
    for (let round = 0; paid < total && round < 40; round++) {
      // a crowd of new buyers, half of whom never pay; then wait for units to come back
      const crowd = Array.from({ length: 30 }, newUser);
      const results = await Promise.all(crowd.map((u, i) => buy(p, u, bases[i % 2])));
      const accepted = results
        .map((r, i) => ({ r, user: crowd[i]! }))
        .filter((x) => x.r.ok) as Array<{ r: { orderId: string }; user: string }>;
      sold += accepted.length;
      if (results.some((r) => !r.ok)) refusals.add(results.find((r) => !r.ok)!.code!);
      // units sold again after the sale had been sold out: they came back
      if (refusals.size > 0 && accepted.length > 0 && round > 0) soldAgain = true;
      await Promise.all(
        accepted.map(async ({ r, user }, i) => {
          if (i % 2 === 1) return; // never pays
          if ((await pay(r.orderId, user, `p-${r.orderId}`)).status === 200) paid++;
        }),
      );
      // the scenario: rounds paced while the unpaid windows close
      await new Promise((r) => setTimeout(r, 400));
    }
    expect(paid).toBe(total);
    expect(sold).toBeGreaterThan(total);
    expect(soldAgain).toBe(true);
    expect([...refusals]).toEqual(['sold-out']);
    await waitFor(
      'every unpaid order expired and returned',
      async () =>
        (await rowsOf(p)).every(
          (r) => r.status === 'paid' || (r.status === 'expired' && r.restocked_at),
        ),
      30_000,
    );
    const rows = await rowsOf(p);
    expect(rows.filter((r) => r.status === 'paid').reduce((a, r) => a + r.quantity, 0)).toBe(total);
    const state = await stateOf(p);
    expect(state.remaining).toBe(0);
    expect(state.returned).toBe(rows.filter((r) => r.status === 'expired').length);
    const r = await reconciled(p);
    expect(r.held.paid).toBe(total);
  });
});
