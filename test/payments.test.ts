/**
 * Payment windows through the real API, worker, Redis and PostgreSQL: pay, cancel, expiry (job
 * and sweep), the webhook's signature, and units that come back exactly once.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../src/http/webhook-signature.js';
import { expiryJobId, returnUnits, reconcile, sweepPayments } from '../src/orders/index.js';
import { restock } from '../src/inventory/index.js';
import { lifecycleDeps } from '../src/composition/roles.js';
import { startApp, type RunningApp } from './support/app.js';
import { waitFor as waitForMs } from './support/cli.js';
import { useNamespace } from './support/namespace.js';

const ns = useNamespace();
const waitFor = <T>(what: string, probe: () => Promise<T>, timeoutMs = 20_000) =>
  waitForMs(what, probe, timeoutMs);
const WEBHOOK_SECRET = 'a-webhook-secret-long-enough-0123456789';
let app: RunningApp;
/** a second API process (its own catalog): restock notices must reach it */
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

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const newUser = () => `u${randomBytes(5).toString('hex')}`;

async function seed(productId: string, body: Record<string, unknown>) {
  const res = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ strategy: 'segmented', segments: 4, ...body }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

async function buy(productId: string, user: string, base = app.url) {
  for (;;) {
    const res = await fetch(`${base}/seckill`, {
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
}

function post(path: string, user: string | undefined, body?: unknown) {
  return fetch(`${app.url}${path}`, {
    method: 'POST',
    headers: {
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(user !== undefined && { 'x-user-id': user }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

const pay = (orderId: string, user: string | undefined, paymentId: unknown) =>
  post(`/orders/${orderId}/pay`, user, { paymentId });
const cancel = (orderId: string, user: string | undefined) =>
  post(`/orders/${orderId}/cancel`, user);

async function orderOf(orderId: string, user: string) {
  const res = await fetch(`${app.url}/orders/${orderId}`, { headers: { 'x-user-id': user } });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; payBy?: string; deductedAt?: string };
}

const rowsOf = (productId: string) =>
  app.rt.db
    .selectFrom('orders')
    .select(['id', 'status', 'quantity', 'restocked_at', 'user_id'])
    .where('product_id', '=', productId)
    .execute();

async function stateOf(productId: string) {
  const res = await fetch(`${app.url}/admin/products/${productId}`, { headers: admin });
  return (await res.json()) as { remaining: number; sold: number; returned: number };
}

async function problemOf(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { type: string; status: number };
  expect(body.status).toBe(res.status);
  return { ...body, code: body.type.replace('urn:seckill:problem:', '') };
}

async function reconciled(productId: string) {
  const r = (await reconcile(app.rt, productId))!;
  expect(r.problems).toEqual([]);
  return r;
}

describe('pay and cancel by the buyer', () => {
  it('pays once per payment id, refuses what no longer awaits payment, and hides orders from others', async () => {
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

    const paid = await pay(ordA.orderId, a, 'pay-A1');
    expect(paid.status).toBe(200);
    expect(((await paid.json()) as { status: string }).status).toBe('paid');
    // the same payment again: the same answer
    const again = await pay(ordA.orderId, a, 'pay-A1');
    expect(again.status).toBe(200);
    expect(((await again.json()) as { status: string }).status).toBe('paid');
    // another payment, or a cancel, of a paid order: 409
    expect((await problemOf(await pay(ordA.orderId, a, 'pay-A2'))).code).toBe('order-paid');
    expect((await problemOf(await cancel(ordA.orderId, a))).code).toBe('order-paid');
    // a payment id settles one order
    expect((await problemOf(await pay(ordB.orderId, b, 'pay-A1'))).code).toBe('payment-id-used');

    // someone else's order does not exist for them
    expect((await cancel(ordB.orderId, c)).status).toBe(404);
    expect((await pay(ordB.orderId, c, 'pay-C')).status).toBe(404);
    expect((await orderOf(ordB.orderId, b)).status).toBe('awaiting_payment');

    // cancel twice: one return; then paying it is refused
    const cancelled = await cancel(ordB.orderId, b);
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as { status: string }).status).toBe('cancelled');
    expect((await cancel(ordB.orderId, b)).status).toBe(200);
    expect((await problemOf(await pay(ordB.orderId, b, 'pay-B'))).code).toBe('order-cancelled');
    await waitFor('the cancelled unit back', async () => (await stateOf(p)).returned === 1);
    expect((await stateOf(p)).remaining).toBe(3); // 4 - 2 sold + 1 returned

    // the policy: a buyer whose order was cancelled may buy again
    const rebuy = await buy(p, b);
    expect(rebuy.ok).toBe(true);
    await waitFor('persisted', async () => (await rowsOf(p)).length === 3);
    const r = await reconciled(p);
    expect(r.returned).toBe(1);
    expect(r.held).toEqual({ final: 0, awaitingPayment: 1, paid: 1, returning: 0 });
    const rows = await rowsOf(p);
    expect(rows.filter((x) => x.status === 'cancelled' && x.restocked_at)).toHaveLength(1);
  });

  it('a pay right after the purchase succeeds while the worker persists the order meanwhile', async () => {
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
    await waitFor('outboxes drained', async () => (await reconcile(app.rt, p))!.pending === 0);
    expect((await reconciled(p)).held.paid).toBe(n);
  });

  it('answers bad input with a 4xx problem and changes nothing', async () => {
    const p = newProduct();
    await seed(p, { total: 2, payWithinSeconds: 600 });
    const u = newUser();
    const o = await buy(p, u);
    if (!o.ok) throw new Error(o.code);
    const cases: Array<[Promise<Response>, number]> = [
      [pay(o.orderId, undefined, 'x'), 401],
      [post(`/orders/${o.orderId}/pay`, u), 400],
      [pay(o.orderId, u, ''), 400],
      [pay(o.orderId, u, 'no spaces allowed'), 400],
      [pay(o.orderId, u, 42), 400],
      [post(`/orders/${o.orderId}/pay`, u, { paymentId: 'ok', extra: 1 }), 400],
      [pay('not-a-uuid', u, 'ok'), 404],
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
    expect((await stateOf(p)).returned).toBe(0);
  });

  it('a final sale takes no payment, and its seed refuses a bad window', async () => {
    const p = newProduct();
    await seed(p, { total: 1 });
    const u = newUser();
    const o = await buy(p, u);
    if (!o.ok) throw new Error(o.code);
    await waitFor('persisted', async () => (await rowsOf(p)).length === 1);
    expect((await problemOf(await pay(o.orderId, u, 'pay-final'))).code).toBe('order-final');
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

describe('the payment webhook', () => {
  const hook = (body: string, signature?: string) =>
    fetch(`${app.url}/payments/webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(signature !== undefined && { 'seckill-signature': signature }),
      },
      body,
    });

  it('pays on a valid signature, once; refuses forged, tampered, stale and unsigned notices', async () => {
    const p = newProduct();
    await seed(p, { total: 3, payWithinSeconds: 600 });
    const u = newUser();
    const o = await buy(p, u);
    if (!o.ok) throw new Error(o.code);
    const body = JSON.stringify({
      type: 'payment.succeeded',
      orderId: o.orderId,
      paymentId: 'wh-1',
    });

    const forged = await hook(body, signWebhook(body, 'not-the-secret-but-long-enough-000000'));
    expect((await problemOf(forged)).code).toBe('invalid-signature');
    const tampered = body.replace('wh-1', 'wh-2');
    expect((await problemOf(await hook(tampered, signWebhook(body, WEBHOOK_SECRET)))).code).toBe(
      'invalid-signature',
    );
    const stale = signWebhook(body, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 301);
    expect((await problemOf(await hook(body, stale))).code).toBe('stale-signature');
    expect((await hook(body)).status).toBe(401);
    expect((await hook(body, 't=abc,v1=zz')).status).toBe(401);
    expect((await orderOf(o.orderId, u)).status).toMatch(/pending|awaiting_payment/);

    const signed = signWebhook(body, WEBHOOK_SECRET);
    const first = await hook(body, signed);
    expect(first.status).toBe(200);
    expect(((await first.json()) as { status: string }).status).toBe('paid');
    // the provider retries (or someone replays it inside the window): the same answer, no change
    const replay = await hook(body, signed);
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { status: string }).status).toBe('paid');
    const rows = await rowsOf(p);
    expect(rows.map((r) => r.status)).toEqual(['paid']);

    const other = JSON.stringify({ type: 'payment.refunded', orderId: o.orderId, paymentId: 'r' });
    const ignored = await hook(other, signWebhook(other, WEBHOOK_SECRET));
    expect(ignored.status).toBe(200);
    expect((await ignored.json()) as object).toMatchObject({ received: true });
    const notJson = '{"type":';
    expect((await hook(notJson, signWebhook(notJson, WEBHOOK_SECRET))).status).toBe(400);
    await reconciled(p);
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

describe('expiry', () => {
  it('pay vs expire at the deadline: every order ends paid or expired, and the expired ones come back', async () => {
    const p = newProduct();
    const n = 200;
    await seed(p, { total: n, payWithinSeconds: 3, limitPerUser: 1 });
    const users = Array.from({ length: n }, newUser);
    const orders = await Promise.all(users.map((u) => buy(p, u)));
    expect(orders.every((o) => o.ok)).toBe(true);
    // every pay lands within 25 ms either side of its order's deadline (Redis and PostgreSQL
    // share this machine's clock)
    const answers = await Promise.all(
      orders.map(async (o, i) => {
        const id = (o as { orderId: string }).orderId;
        const view = await orderOf(id, users[i]!);
        const at = Date.parse(view.payBy!) + ((i % 11) - 5) * 5;
        await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
        return { id, status: (await pay(id, users[i]!, `race-${id}`)).status };
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
    expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true);
    // the deadline was really contested (about half of the pays came after it)
    expect(paid).toBeGreaterThan(0);
    expect(expired).toBeGreaterThan(0);
    const state = await stateOf(p);
    expect(state.returned).toBe(expired);
    expect(state.remaining).toBe(expired);
    const r = await reconciled(p);
    expect(r.held).toEqual({ final: 0, awaitingPayment: 0, paid, returning: 0 });
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
    const deps = lifecycleDeps(app.rt);
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
    expect((await restock(app.rt.redis, k, { ...rowB, orderId: rowB.id })).code).toBe('restocked');
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
