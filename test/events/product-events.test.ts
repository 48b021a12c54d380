/**
 * Events that are not an order's (a sample producer's: test/support/sample-producer.ts) on the
 * feed and the webhooks beside the order events: published twice is one event, each subject
 * numbered in commit order; the feed pages both kinds under one cursor and shows neither behind
 * a cursor already passed; a real HTTP receiver (test/support/receiver.ts) gets each subject's
 * events in order beside the orders', only the types its endpoint takes, retried after failures;
 * a dead letter is listed and replays with the same ids; pruning keeps what an endpoint is owed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EndpointsRepository,
  EventsRepository,
  InvalidProductEvent,
  newSecret,
  publishProductEvents,
  type EventType,
} from '../../src/events/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';
import { startReceiver, type Arrival, type Receiver } from '../support/receiver.js';
import { note, publishNotes, SAMPLE_SOURCE } from '../support/sample-producer.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'product-events-test-secret-0123456789abc';
let app: RunningApp;
const receivers: Receiver[] = [];

beforeAll(async () => {
  app = await startApp(
    ns.config({
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // three attempts, then a dead letter
      WEBHOOK_RETRY_SCHEDULE: '40ms,80ms',
      WEBHOOK_TIMEOUT_MS: '1500',
      EVENT_RELAY_INTERVAL_MS: '40',
      EVENT_RETENTION_HOURS: '168',
    }),
    { worker: true },
  );
});
afterAll(async () => {
  await app?.close();
  for (const r of receivers) await r.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${app.url}${path}`, {
    method,
    headers: client.admin,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the receiver reads on arrival: the order row's version, or the subject's newest sequence. */
async function committed(subject: string): Promise<number | null> {
  if (UUID.test(subject)) {
    const row = await app.rt.db
      .selectFrom('orders')
      .select('version')
      .where('id', '=', subject)
      .executeTakeFirst();
    return row?.version ?? null;
  }
  const row = await app.rt.db
    .selectFrom('product_events')
    .select((eb) => eb.fn.max('sequence').as('last'))
    .where('subject', '=', subject)
    .executeTakeFirst();
  return row?.last ?? null;
}

/** An endpoint for `types` (the sample types are listed nowhere: registered here, not by the API). */
async function endpointFor(types: string[], status: 'active' | 'disabled' = 'active') {
  const r = await startReceiver(committed);
  receivers.push(r);
  const secret = newSecret();
  r.secrets.push(secret);
  const endpoints = new EndpointsRepository(app.rt.db);
  const id = `ep_${randomBytes(12).toString('base64url')}`;
  await endpoints.create({ id, url: r.url, types: types as EventType[], secret });
  if (status === 'disabled') await endpoints.setStatus(id, 'disabled');
  return { r, id };
}

async function finalSales(n: number): Promise<string[]> {
  const p = newProduct();
  await client.seed(p, { total: n });
  const orders: string[] = [];
  for (let i = 0; i < n; i++) {
    const o = await client.buy(p, newUser());
    if (!o.ok) throw new Error(o.code);
    await waitFor(
      `the row of ${o.orderId}`,
      () =>
        app.rt.db.selectFrom('orders').select('id').where('id', '=', o.orderId).executeTakeFirst(),
      30_000,
      20,
    );
    orders.push(o.orderId);
  }
  return orders;
}

interface Envelope {
  id: string;
  type: string;
  subject: string;
  source: string;
  orderversion?: number;
  subjectsequence?: number;
  [attribute: string]: unknown;
}

/** Every event after `after` (the whole feed when left out), page by page. */
async function feed(after?: string, limit = 500): Promise<{ events: Envelope[]; next: string }> {
  const events: Envelope[] = [];
  let cursor = after;
  const overdue = deadlineOf("the feed's last page", 30_000);
  for (;;) {
    overdue();
    const q = new URLSearchParams({ limit: String(limit), ...(cursor && { after: cursor }) });
    const res = await admin('GET', `/admin/events?${q}`);
    expect(res.status, await res.clone().text()).toBe(200);
    const page = (await res.json()) as { events: Envelope[]; next: string };
    events.push(...page.events);
    if (page.events.length < limit) return { events, next: page.next };
    cursor = page.next;
  }
}

/**
 * The feed after `after` once it shows `count` events of these subjects. The feed holds an event
 * back while a transaction that began before it runs anywhere on the server (the other test
 * files' databases too): a moment under load.
 */
async function feedOf(
  subjects: readonly string[],
  count: number,
  after?: string,
): Promise<{ events: Envelope[]; next: string }> {
  let last: Envelope[] = [];
  return waitFor(
    () => `${count} events of ${subjects.join(', ')} in the feed (${last.length})`,
    async () => {
      const page = await feed(after);
      last = page.events.filter((e) => subjects.includes(e.subject));
      return last.length >= count && { events: last, next: page.next };
    },
    30_000,
    20,
  );
}

/** The feed's ids of these subjects' events, in feed order (what a receiver must get). */
const feedIds = async (subjects: readonly string[], count: number) =>
  (await feedOf(subjects, count)).events.map((e) => e.id);

const ackedOf = (r: Receiver, subjects: readonly string[]) =>
  r.acked().filter((a) => subjects.includes(a.orderId));

async function allAcked(r: Receiver, subjects: readonly string[], want: readonly string[]) {
  await waitFor(
    () => `${want.length} events acknowledged (got ${ackedOf(r, subjects).length})`,
    async () => {
      const got = new Set(ackedOf(r, subjects).map((a) => a.id));
      return want.every((id) => got.has(id));
    },
    60_000,
    20,
  );
}

/** Per subject, versions acknowledged after dedup only go up; none came before its commit. */
function expectOrdered(arrivals: readonly Arrival[]) {
  const last = new Map<string, number>();
  for (const a of arrivals) {
    expect(a.version, `${a.id} after ${last.get(a.orderId)}`).toBeGreaterThan(
      last.get(a.orderId) ?? 0,
    );
    last.set(a.orderId, a.version);
    expect(a.verified, `${a.id} signed`).toBe(true);
    expect(a.rowVersion, `${a.id}: committed when it arrived`).not.toBeNull();
    expect(a.rowVersion!).toBeGreaterThanOrEqual(a.version);
  }
}

const rowsOf = (subject: string) =>
  app.rt.db
    .selectFrom('product_events')
    .select(['id', 'sequence', 'type', 'product_id', 'source'])
    .where('subject', '=', subject)
    .orderBy('sequence')
    .execute();

describe('publishing', () => {
  it('writes an event published twice once, numbers each subject 1, 2, 3 in commit order', async () => {
    const p = newProduct();
    const subject = `${p}/entries/alice`;
    expect(await publishNotes(app.rt.db, [note(p, subject, 1), note(p, subject, 2)])).toBe(2);
    // the producer crashed and publishes again, with one more; a repeat within the batch too
    expect(
      await publishNotes(app.rt.db, [
        note(p, subject, 1),
        note(p, subject, 2),
        note(p, subject, 3),
        note(p, subject, 3),
      ]),
    ).toBe(1);
    // in the producer's transaction: rolled back, nothing (and no number) is taken
    await app.rt.db
      .transaction()
      .execute(async (tx) => {
        expect(await publishNotes(tx, [note(p, subject, 4)])).toBe(1);
        throw new Error('the producer fails after publishing');
      })
      .catch(() => undefined);
    expect(await publishNotes(app.rt.db, [note(p, subject, 5)])).toBe(1);
    expect((await rowsOf(subject)).map((r) => [r.id, r.sequence])).toEqual([
      [`sample.noted:${subject}:1`, 1],
      [`sample.noted:${subject}:2`, 2],
      [`sample.noted:${subject}:3`, 3],
      [`sample.noted:${subject}:5`, 4],
    ]);
    for (const row of await rowsOf(subject)) {
      expect(row).toMatchObject({ type: 'sample.noted', product_id: p, source: SAMPLE_SOURCE });
    }
  });

  it('numbers a subject in the order its publishers commit: the second waits for the first', async () => {
    const p = newProduct();
    const subject = `${p}/draw`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstWrote!: () => void;
    const wrote = new Promise<void>((resolve) => (firstWrote = resolve));
    const first = app.rt.db.transaction().execute(async (tx) => {
      await publishNotes(tx, [note(p, subject, 1, 'sample.frozen')]);
      firstWrote();
      await held;
    });
    await wrote;
    let secondDone = false;
    const second = publishNotes(app.rt.db, [note(p, subject, 2, 'sample.drawn')]).then((n) => {
      secondDone = true;
      return n;
    });
    // the second holds on the subject's row until the first commits
    await waitFor(
      'the second publisher waiting on the subject',
      async () => {
        const r = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
            and query like '%product_event_subjects%'`.execute(app.rt.db);
        return Number(r.rows[0]!.n) === 1;
      },
      10_000,
      20,
    );
    expect(secondDone).toBe(false);
    release();
    await first;
    expect(await second).toBe(1);
    expect((await rowsOf(subject)).map((r) => [r.type, r.sequence])).toEqual([
      ['sample.frozen', 1],
      ['sample.drawn', 2],
    ]);
  });

  it('refuses what would break an id, an order or a lane, and writes nothing of the batch', async () => {
    const p = newProduct();
    const subject = `${p}/refused`;
    const good = note(p, subject, 1);
    const bad: Array<[string, Parameters<typeof publishProductEvents>]> = [
      [
        'a uuid subject (an order owns it)',
        [
          app.rt.db,
          SAMPLE_SOURCE,
          [good, { ...good, id: 'sample.noted:x', subject: randomUUID() }],
        ],
      ],
      ['an id not "<type>:..."', [app.rt.db, SAMPLE_SOURCE, [good, { ...good, id: 'x-1' }]]],
      [
        'an order type',
        [app.rt.db, SAMPLE_SOURCE, [{ ...good, type: 'order.paid', id: 'order.paid:1' }]],
      ],
      ['the orders family', [app.rt.db, '/seckill/orders', [good]]],
      ['a source outside /seckill', [app.rt.db, 'https://elsewhere.example', [good]]],
      ['a product id with a space', [app.rt.db, SAMPLE_SOURCE, [{ ...good, productId: 'a b' }]]],
      ['data that is no object', [app.rt.db, SAMPLE_SOURCE, [{ ...good, data: [1] as never }]]],
      ['a subject with a space', [app.rt.db, SAMPLE_SOURCE, [{ ...good, subject: 'a b' }]]],
    ];
    for (const [what, args] of bad) {
      await expect(publishProductEvents(...args), what).rejects.toThrow(InvalidProductEvent);
    }
    expect(await rowsOf(subject)).toEqual([]);
  });
});

describe('the feed', () => {
  it('pages order and product events under one cursor, in commit order, with any page size', async () => {
    const start = (await feed()).next;
    const p = newProduct();
    const [a, b] = [`${p}/places/a`, `${p}/places/b`];
    const orders: string[] = [];
    await publishNotes(app.rt.db, [note(p, a, 1), note(p, b, 1)]);
    orders.push(...(await finalSales(2)));
    await publishNotes(app.rt.db, [note(p, a, 2)]);
    orders.push(...(await finalSales(1)));
    await publishNotes(app.rt.db, [note(p, b, 2), note(p, a, 3)]);

    const whole = (await feedOf([a, b, ...orders], 8, start)).events;
    expect((await feed(start)).events).toEqual(whole);
    expect(whole.map((e) => [e.subject, e.orderversion ?? e.subjectsequence])).toEqual([
      [a, 1],
      [b, 1],
      [orders[0], 1],
      [orders[1], 1],
      [a, 2],
      [orders[2], 1],
      [b, 2],
      [a, 3],
    ]);
    for (const size of [1, 2, 3]) {
      expect((await feed(start, size)).events.map((e) => e.id)).toEqual(whole.map((e) => e.id));
    }
    // the envelope: the order events' as before, the product events' with their own extensions
    const ofA = whole.find((e) => e.subject === a)!;
    expect(ofA).toEqual({
      specversion: '1.0',
      id: `sample.noted:${a}:1`,
      source: SAMPLE_SOURCE,
      type: 'sample.noted',
      subject: a,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      datacontenttype: 'application/json',
      subjectsequence: 1,
      productid: p,
      data: { productId: p, subject: a, n: 1 },
    });
    expect(Object.keys(ofA).at(-1)).toBe('data');
    const ofOrder = whole.find((e) => e.subject === orders[0])!;
    expect(ofOrder).toMatchObject({ source: '/seckill/orders', orderversion: 1 });
    expect(ofOrder).not.toHaveProperty('subjectsequence');
    expect(ofOrder).not.toHaveProperty('productid');
  });

  it('shows no event of a transaction still open, nor a later product event, until it ends', async () => {
    const start = (await feed()).next;
    const p = newProduct();
    const [held, later] = [`${p}/held`, `${p}/later`];
    let release!: () => void;
    const open = new Promise<void>((resolve) => (release = resolve));
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const holding = app.rt.db.transaction().execute(async (tx) => {
      await publishNotes(tx, [note(p, held, 1)]);
      wrote();
      await open;
    });
    await written;
    // committed while the first is open: a product event, then a sale
    await publishNotes(app.rt.db, [note(p, later, 1)]);
    const [sale] = await finalSales(1);
    const mine = (events: Envelope[]) =>
      events.map((e) => e.subject).filter((s) => [held, later, sale].includes(s));
    expect(mine((await feed(start)).events)).toEqual([]);
    release();
    await holding;
    const after = await feedOf([held, later, sale!], 3, start);
    // in the order the transactions began writing: the held one first
    expect(mine(after.events)).toEqual([held, later, sale]);
    expect((await feed(after.next)).events).toEqual([]);
  });
});

describe('webhooks', () => {
  it("sends each subject's events in order beside the orders', only the types subscribed, retried after failures", async () => {
    const all = await endpointFor(['order.created', 'sample.noted', 'sample.other']);
    const other = await endpointFor(['sample.other']);
    const ordersOnly = await endpointFor(['order.created']);
    const p = newProduct();
    const subjects = [`${p}/s/1`, `${p}/s/2`, `${p}/s/3`];
    // every third event of these subjects fails its first attempt (a new endpoint may also be
    // handed an earlier test's events the relay had not yet passed when it was registered)
    const tried = new Set<string>();
    all.r.answer = (a) => {
      if (!subjects.includes(a.orderId) || a.version % 3 !== 0 || tried.has(a.id)) {
        return { status: 200 };
      }
      tried.add(a.id);
      return { status: 500 };
    };
    const orders: string[] = [];
    for (let n = 1; n <= 4; n++) {
      await publishNotes(
        app.rt.db,
        subjects.map((s, i) => note(p, s, n, (n + i) % 2 === 0 ? 'sample.other' : 'sample.noted')),
      );
      orders.push(...(await finalSales(1)));
    }
    const want = await feedIds([...subjects, ...orders], 3 * 4 + 4);
    expect(want).toHaveLength(3 * 4 + 4);
    await allAcked(all.r, [...subjects, ...orders], want);
    const acked = ackedOf(all.r, [...subjects, ...orders]);
    expect(acked.map((a) => a.id).sort()).toEqual([...want].sort());
    expectOrdered(acked);
    expect(tried.size).toBe(3);

    const others = (await feed()).events
      .filter((e) => subjects.includes(e.subject) && e.type === 'sample.other')
      .map((e) => e.id);
    expect(others).toHaveLength(6);
    await allAcked(other.r, subjects, others);
    await allAcked(ordersOnly.r, orders, await feedIds(orders, 4));
    // nothing of the types they do not take, once the rest is there
    expect(ackedOf(other.r, [...subjects, ...orders]).map((a) => a.type)).toEqual(
      others.map(() => 'sample.other'),
    );
    expect(ackedOf(ordersOnly.r, [...subjects, ...orders]).map((a) => a.type)).toEqual(
      orders.map(() => 'order.created'),
    );
    expectOrdered(ackedOf(other.r, subjects));
    for (const e of [all, other, ordersOnly])
      await new EndpointsRepository(app.rt.db).setStatus(e.id, 'disabled');
  });

  it('dead-letters a subject, holds its later events, lists it and replays it with the same ids', async () => {
    const d = await endpointFor(['sample.dead']);
    const p = newProduct();
    const [s, t] = [`${p}/dead`, `${p}/alive`];
    d.r.answer = (a) => (a.orderId === s ? { status: 500 } : { status: 200 });
    await publishNotes(app.rt.db, [note(p, s, 1, 'sample.dead'), note(p, t, 1, 'sample.dead')]);
    await publishNotes(app.rt.db, [note(p, s, 2, 'sample.dead')]);
    type Letter = {
      subject: string;
      eventId: string;
      version: number;
      events: number;
      cursor: string;
    };
    const letters = async () =>
      (
        (await (await admin('GET', `/admin/webhook-endpoints/${d.id}/dead-letters`)).json()) as {
          deadLetters: Letter[];
        }
      ).deadLetters;
    const [letter] = await waitFor(
      'the dead letter',
      async () => ((await letters()).length === 1 ? await letters() : undefined),
      30_000,
      20,
    );
    expect(letter).toMatchObject({
      subject: s,
      eventId: `sample.dead:${s}:1`,
      type: 'sample.dead',
      version: 1,
      events: 2,
      attempts: 3,
      error: 'answered 500',
    });
    expect(letter).not.toHaveProperty('orderId');
    await allAcked(d.r, [t], [`sample.dead:${t}:1`]);
    // the dead subject's second event waits behind its first: never tried
    expect(d.r.arrivals.filter((a) => a.id === `sample.dead:${s}:2`)).toEqual([]);
    // the endpoint's counts (the list, the dashboard): the dead subject, nothing pending
    await waitFor(
      'pending 0, one dead letter',
      async () => {
        const listed = (
          (await (await admin('GET', '/admin/webhook-endpoints')).json()) as {
            endpoints: Array<{ id: string; pending: number; deadLetters: number }>;
          }
        ).endpoints.find((e) => e.id === d.id);
        return listed?.pending === 0 && listed.deadLetters === 1;
      },
      30_000,
      20,
    );

    d.r.answer = () => ({ status: 200 });
    const replay = await admin('POST', `/admin/webhook-endpoints/${d.id}/replay`, {
      from: letter!.cursor,
    });
    expect(replay.status).toBe(202);
    expect(await replay.json()).toEqual({ orders: 0, lanes: 2 });
    await allAcked(d.r, [s], [`sample.dead:${s}:1`, `sample.dead:${s}:2`]);
    expect(ackedOf(d.r, [s]).map((a) => a.id)).toEqual([
      `sample.dead:${s}:1`,
      `sample.dead:${s}:2`,
    ]);
    expect(await letters()).toEqual([]);
    await new EndpointsRepository(app.rt.db).setStatus(d.id, 'disabled');
  });
});

describe('retention', () => {
  it('prunes the product events every endpoint has, keeps one an endpoint is still owed', async () => {
    const p = newProduct();
    const [kept, owed] = [`${p}/delivered`, `${p}/owed`];
    const healthy = await endpointFor(['sample.kept']);
    await publishNotes(app.rt.db, [
      note(p, kept, 1, 'sample.kept'),
      note(p, kept, 2, 'sample.kept'),
    ]);
    await allAcked(healthy.r, [kept], [`sample.kept:${kept}:1`, `sample.kept:${kept}:2`]);
    const away = await endpointFor(['sample.kept'], 'disabled');
    await publishNotes(app.rt.db, [note(p, owed, 1, 'sample.kept')]);
    await allAcked(healthy.r, [owed], [`sample.kept:${owed}:1`]);
    const owing = () =>
      app.rt.db
        .selectFrom('webhook_lanes')
        .select('subject')
        .whereRef('acked_version', '<', 'wanted_version')
        .where('subject', 'in', [kept, owed])
        .execute();
    await waitFor(
      'the disabled endpoint owed one subject, nothing else owed',
      async () => (await owing()).length === 1,
      30_000,
      20,
    );
    const listed = (
      (await (await admin('GET', '/admin/webhook-endpoints')).json()) as {
        endpoints: Array<{ id: string; pending: number }>;
      }
    ).endpoints.find((e) => e.id === away.id);
    expect(listed).toMatchObject({ pending: 1 });

    // a week and a day pass
    await app.rt.db
      .updateTable('product_events')
      .set({ occurred_at: sql`occurred_at - interval '8 days'` })
      .where('subject', 'in', [kept, owed])
      .execute();
    const events = new EventsRepository(app.rt.db);
    expect(await events.pruneEvents(168, 10_000)).toBe(2);
    expect((await rowsOf(kept)).length).toBe(0);
    expect((await rowsOf(owed)).map((r) => r.sequence)).toEqual([1]);

    await new EndpointsRepository(app.rt.db).setStatus(away.id, 'active');
    await allAcked(away.r, [owed], [`sample.kept:${owed}:1`]);
    await waitFor('nothing owed', async () => (await owing()).length === 0, 30_000, 20);
    expect(await events.pruneEvents(168, 10_000)).toBe(1);
    expect(await rowsOf(owed)).toEqual([]);
    // the subject's next event, once its first was pruned, goes on from 2 (its lanes
    // acknowledged 1): delivered
    expect(await publishNotes(app.rt.db, [note(p, owed, 2, 'sample.kept')])).toBe(1);
    expect((await rowsOf(owed)).map((r) => r.sequence)).toEqual([2]);
    await allAcked(away.r, [owed], [`sample.kept:${owed}:2`]);
  });
});
