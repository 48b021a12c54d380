/**
 * Order events are written in the transaction of each change of state (created, paid,
 * cancelled, expired, returned), with a unique id and a per-order version; the pull feed
 * (GET /admin/events) reads them in commit order, shows none of a transaction still open, never
 * one behind a cursor already passed, and says 410 for a cursor older than the retention.
 * GET /admin/orders pages the orders by id under filters.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventsRepository } from '../../src/events/index.js';
import { csvCell } from '../../src/cli/orders-export.js';
import { insertOrders } from '../../src/orders/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, runCli, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';
import { orderWithEvents } from '../support/factories.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'events-test-secret-long-enough-0123456789';
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET }), { worker: true });
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

interface Event {
  id: string;
  type: string;
  subject: string;
  orderversion: number;
  specversion: string;
  source: string;
  time: string;
  data: Record<string, unknown>;
}

async function admin(path: string) {
  return fetch(`${app.url}${path}`, { headers: client.admin });
}

/** Every event after `after` (the whole feed when left out), page by page. */
async function feed(after?: string, limit = 500): Promise<{ events: Event[]; next: string }> {
  const events: Event[] = [];
  let cursor = after;
  const overdue = deadlineOf('the end of the event feed', 50_000);
  for (;;) {
    overdue();
    const q = new URLSearchParams({ limit: String(limit), ...(cursor && { after: cursor }) });
    const res = await admin(`/admin/events?${q}`);
    expect(res.status, await res.clone().text()).toBe(200);
    const page = (await res.json()) as { events: Event[]; next: string };
    events.push(...page.events);
    if (page.events.length < limit) return { events, next: page.next };
    cursor = page.next;
  }
}

const eventsOf = (events: Event[], orderId: string) =>
  events.filter((e) => e.subject === orderId).map((e) => [e.type, e.orderversion]);

const rowOf = (orderId: string) =>
  app.rt.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirst();

const sold = (productId: string, user: string) =>
  orderWithEvents(client, app.rt.db, productId, user);

describe('every change of state is an event', () => {
  it('created, paid; created, cancelled, returned; created, expired, returned; a final sale: created', async () => {
    const p = newProduct();
    await client.seed(p, {
      total: 10,
      payWithinSeconds: 600,
      price: { amount: 700, currency: 'EUR' },
    });
    const [a, b] = [newUser(), newUser()];
    const paid = await sold(p, a);
    const intent = await client.intentOf(paid, a);
    const pay = await client.hook({
      type: 'payment.succeeded',
      orderId: paid,
      paymentIntentId: intent.paymentIntentId,
      paymentId: `psp-${paid}`,
      amount: 700,
      currency: 'EUR',
    });
    expect(pay.status).toBe(200);
    const cancelled = await sold(p, b);
    expect((await client.cancel(cancelled, b)).status).toBe(200);
    await waitFor('the return', async () => (await rowOf(cancelled))?.restocked_at, 30_000, 20);

    const quick = newProduct();
    await client.seed(quick, { total: 2, payWithinSeconds: 1 });
    const expired = await sold(quick, newUser());
    await waitFor('the expiry', async () => (await rowOf(expired))?.restocked_at, 30_000, 50);

    const final = newProduct();
    await client.seed(final, { total: 2 });
    const kept = await sold(final, newUser());

    const { events } = await feed();
    expect(eventsOf(events, paid)).toEqual([
      ['order.created', 1],
      ['order.paid', 2],
    ]);
    expect(eventsOf(events, cancelled)).toEqual([
      ['order.created', 1],
      ['order.cancelled', 2],
      ['order.returned', 3],
    ]);
    expect(eventsOf(events, expired)).toEqual([
      ['order.created', 1],
      ['order.expired', 2],
      ['order.returned', 3],
    ]);
    expect(eventsOf(events, kept)).toEqual([['order.created', 1]]);

    // the envelope, the order at each version (with its price), one id per event
    const ofPaid = events.filter((e) => e.subject === paid);
    expect(ofPaid[0]).toMatchObject({
      specversion: '1.0',
      id: `evt_${paid}_1`,
      source: '/seckill/orders',
      type: 'order.created',
      data: {
        orderId: paid,
        status: 'awaiting_payment',
        version: 1,
        userId: a,
        price: { amount: 700, currency: 'EUR' },
        total: { amount: 700, currency: 'EUR' },
      },
    });
    expect(ofPaid[1]!.data).toMatchObject({ status: 'paid', paymentId: `psp-${paid}`, version: 2 });
    expect(events.find((e) => e.subject === kept)!.data.status).toBe('persisted');
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    // the row's version is the last event's; GET /orders/:id says it too
    expect((await rowOf(cancelled))?.version).toBe(3);
    expect((await client.orderOf(cancelled, b)) as { version?: number }).toMatchObject({
      version: 3,
    });
  });

  it('an order written twice (a redelivered batch) is one created event', async () => {
    const p = newProduct();
    await client.seed(p, { total: 2 });
    const orderId = await sold(p, newUser());
    const row = (await rowOf(orderId))!;
    const again = {
      orderId,
      productId: p,
      epoch: row.epoch,
      userId: row.user_id,
      quantity: row.quantity,
      segment: row.segment,
      homeSegment: row.home_segment,
      outboxId: row.outbox_id,
      deductedAt: row.deducted_at.getTime(),
      payWithinSeconds: 0,
    };
    expect(await insertOrders(app.rt.db, [again as never, again as never])).toBe(0);
    expect(eventsOf((await feed()).events, orderId)).toEqual([['order.created', 1]]);
  });
});

describe('the feed', () => {
  /** A connection of its own, to hold a transaction open. */
  async function connection() {
    const c = new pg.Client({ connectionString: ns.databaseUrl });
    await c.connect();
    return c;
  }

  const insertRow = (c: pg.Client, productId: string, orderId: string) =>
    c.query(
      `insert into orders (id, idempotency_key, product_id, epoch, user_id, quantity, segment,
         home_segment, outbox_id, deducted_at)
       values ($1, $2, $3, 1, 'held', 1, 0, 0, '1-0', now())`,
      [orderId, `${productId}:1:${orderId}`, productId],
    );

  it('shows no event of a transaction still open, and none after it until it ends: no event ever appears behind a cursor', async () => {
    const p = newProduct();
    await client.seed(p, { total: 5 });
    const start = (await feed()).next;
    const held = await connection();
    const rolled = await connection();
    try {
      const heldId = '0000000f-0000-4000-8000-000000000001';
      const rolledId = '0000000f-0000-4000-8000-000000000002';
      await held.query('begin');
      await insertRow(held, p, heldId);
      await rolled.query('begin');
      await insertRow(rolled, p, rolledId);
      // a later sale commits while both are open
      const later = await sold(p, newUser());
      const meanwhile = await feed(start);
      expect(meanwhile.events.map((e) => e.subject)).not.toContain(heldId);
      expect(meanwhile.events.map((e) => e.subject)).not.toContain(later);

      await rolled.query('rollback');
      await held.query('commit');
      const after = await feed(start);
      const subjects = after.events.map((e) => e.subject);
      expect(subjects).not.toContain(rolledId);
      // in the order the transactions began writing: the held one first, then the later sale
      expect(subjects.indexOf(heldId)).toBeGreaterThanOrEqual(0);
      expect(subjects.indexOf(heldId)).toBeLessThan(subjects.indexOf(later));
      expect((await feed(after.next)).events).toEqual([]);
    } finally {
      await held.end();
      await rolled.end();
    }
  });

  it('pages with any page size to the same events, and resumes from any cursor', async () => {
    const whole = (await feed()).events;
    expect(whole.length).toBeGreaterThan(5);
    const byOne = (await feed(undefined, 1)).events;
    expect(byOne.map((e) => e.id)).toEqual(whole.map((e) => e.id));
    const res = await admin('/admin/events?limit=3');
    const first = (await res.json()) as { events: Event[]; next: string };
    expect((await feed(first.next)).events.map((e) => e.id)).toEqual(
      whole.slice(3).map((e) => e.id),
    );
  });

  it.each([
    ['after=abc', 'a cursor that is not one'],
    ['after=1.2.3', 'a cursor with three parts'],
    ['limit=0', 'a page of none'],
    ['limit=1001', 'a page over the bound'],
    ['since=1', 'an unknown parameter'],
  ])('refuses %s (%s): 400', async (q) => {
    const res = await admin(`/admin/events?${q}`);
    expect(res.status).toBe(400);
  });

  it('answers 410 for a cursor older than the retention, and starts at the oldest kept without one', async () => {
    const p = newProduct();
    await client.seed(p, { total: 3 });
    await sold(p, newUser());
    const all = (await feed()).events;
    // the two oldest events pass the retention
    const old = all.slice(0, 2).map((e) => e.id);
    await app.rt.db
      .updateTable('order_events')
      .set({ occurred_at: new Date(Date.now() - 3 * 3_600_000) })
      .where('id', 'in', old)
      .execute();
    expect(await new EventsRepository(app.rt.db).pruneEvents(2, 1_000)).toBe(2);
    const expired = await admin('/admin/events?after=0.0');
    expect(expired.status).toBe(410);
    const problem = (await expired.json()) as { type: string; oldest: string };
    expect(problem.type).toBe('urn:seckill:problem:cursor-expired');
    const kept = (await feed()).events;
    expect(kept.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
    expect((await feed(problem.oldest)).events.map((e) => e.id)).toEqual(kept.map((e) => e.id));
  });
});

describe('GET /admin/orders', () => {
  const list = async (q: string) => {
    const res = await admin(`/admin/orders?${q}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as {
      orders: Array<{ orderId: string; status: string; productId: string }>;
      next: string | null;
    };
  };

  it('filters by product, status and updatedSince, and pages by id: every order once while more are sold', async () => {
    const p = newProduct();
    await client.seed(p, { total: 30, payWithinSeconds: 600 });
    const users = Array.from({ length: 12 }, newUser);
    const ids = await Promise.all(users.map((u) => sold(p, u)));
    expect((await client.cancel(ids[0]!, users[0]!)).status).toBe(200);

    const seen: string[] = [];
    let after: string | null = null;
    let more = 0;
    do {
      const page = await list(`product=${p}&limit=5${after ? `&after=${after}` : ''}`);
      seen.push(...page.orders.map((o) => o.orderId));
      // concurrent writes between pages: new sales and a cancel
      if (more < 3) (more++, await sold(p, newUser()));
      after = page.next;
    } while (after);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect([...seen].sort()).toEqual(seen);

    const cancelled = await list(`product=${p}&status=cancelled`);
    expect(cancelled.orders.map((o) => o.orderId)).toEqual([ids[0]]);
    const since = (await rowOf(ids[0]!))!.updated_at.toISOString();
    const changed = await list(`product=${p}&updatedSince=${encodeURIComponent(since)}`);
    expect(changed.orders.map((o) => o.orderId)).toContain(ids[0]);
    expect(changed.orders.length).toBeLessThan(seen.length);
    expect((await list(`product=${p}&status=paid`)).orders).toEqual([]);
  });

  it.each([
    'status=shipped',
    'product=bad%20id',
    'after=not-an-id',
    'updatedSince=yesterday',
    'limit=5000',
    'colour=red',
  ])('refuses %s: 400', async (q) => {
    expect((await admin(`/admin/orders?${q}`)).status).toBe(400);
  });
});

describe('seckill orders export', () => {
  const exportRun = async (args: string[]) => {
    const run = runCli(['orders', 'export', ...args], {
      DATABASE_URL: ns.databaseUrl,
      REDIS_URL: ns.redisUrl,
      KEY_PREFIX: ns.id,
    });
    return { code: await run.exited, out: run.stdout(), err: run.stderr() };
  };

  it('streams every page as NDJSON (as GET /admin/orders) and as CSV; refuses a bad flag (exit 2)', async () => {
    const p = newProduct();
    await client.seed(p, { total: 1_200, price: { amount: 250, currency: 'GBP' } });
    // more than one page (1 000) of orders
    const rows = Array.from({ length: 1_005 }, (_, i) => ({
      orderId: `0000${p.slice(1, 5)}-0000-4000-8000-${String(i).padStart(12, '0')}`,
      productId: p,
      epoch: 1,
      userId: i === 0 ? '=cmd,"x"' : `u${i}`,
      quantity: 1,
      segment: 0,
      homeSegment: 0,
      outboxId: `${i}-0`,
      deductedAt: Date.now(),
      payWithinSeconds: 0,
    }));
    expect(await insertOrders(app.rt.db, rows as never)).toBe(1_005);
    const ndjson = await exportRun(['--product', p]);
    expect(ndjson.code, ndjson.err).toBe(0);
    const lines = ndjson.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { orderId: string });
    expect(lines.map((o) => o.orderId)).toEqual(rows.map((r) => r.orderId));
    const page = (await (await admin(`/admin/orders?product=${p}&limit=3`)).json()) as {
      orders: unknown[];
    };
    expect(lines.slice(0, 3)).toEqual(page.orders);

    const csv = await exportRun(['--product', p, '--format', 'csv', '--status', 'persisted']);
    expect(csv.code, csv.err).toBe(0);
    const csvLines = csv.out.trim().split('\n');
    expect(csvLines).toHaveLength(1 + 1_005);
    expect(csvLines[0]).toMatch(/^orderId,productId,userId,quantity,status,version,unitAmount/);
    expect(csvLines[1]).toContain(`,"'=cmd,""x""",1,persisted,1,250,GBP,250,`);
    expect((await exportRun(['--product', p, '--status', 'paid'])).out).toBe('');

    const bad = await exportRun(['--format', 'xml', '--status', 'shipped']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--format: ndjson or csv/);
    expect(bad.err).toMatch(/--status: one of persisted/);
  });

  it('escapes a CSV cell as RFC 4180 says, and defuses formulas', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    expect(csvCell('=SUM(A1)')).toBe(`"'=SUM(A1)"`);
    expect(csvCell('@x')).toBe(`"'@x"`);
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(undefined)).toBe('');
  });
});
