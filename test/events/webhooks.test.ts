/**
 * Order events pushed to a real HTTP receiver (test/support/receiver.ts) that answers 200, 500,
 * times out, answers 410, and dies mid-delivery: every order's events arrive, signed, in version
 * order per order after dedup by id, none before its row is committed (the receiver reads the
 * row on arrival); a retry never overtakes; after the (shortened) schedule an event is
 * dead-lettered, visible and replayable with the same ids; 410 disables the endpoint.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';
import { freePort } from '../support/ports.js';
import {
  startReceiver,
  type Answer,
  type Arrival,
  type Receiver,
  orderVersionIn,
} from '../support/receiver.js';
import { orderWithEvents } from '../support/factories.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'webhooks-out-test-secret-long-enough-0123';
let app: RunningApp;
const receivers: Receiver[] = [];

beforeAll(async () => {
  app = await startApp(
    ns.config({
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // 5 attempts: the schedule shortened from hours to milliseconds (the last wait long
      // enough for a receiver to be restarted in)
      WEBHOOK_RETRY_SCHEDULE: '40ms,80ms,120ms,3s',
      WEBHOOK_TIMEOUT_MS: '1500',
      EVENT_RELAY_INTERVAL_MS: '40',
    }),
    { worker: true },
  );
});
afterAll(async () => {
  await app?.close();
  for (const r of receivers) await r.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

const rowVersion = orderVersionIn(() => app.rt.db);

async function receiver() {
  const r = await startReceiver(rowVersion);
  receivers.push(r);
  return r;
}

interface EndpointAnswer {
  id: string;
  url: string;
  events: string[];
  status: string;
  secret?: string;
  disabledReason?: string;
  pending?: number;
  deadLetters?: number;
}

const adminCall = (method: string, path: string, body?: unknown) =>
  fetch(`${app.url}${path}`, {
    method,
    headers: client.admin,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

async function register(r: Receiver, events = ['*']): Promise<EndpointAnswer> {
  const res = await adminCall('POST', '/admin/webhook-endpoints', { url: r.url, events });
  expect(res.status, await res.clone().text()).toBe(201);
  const endpoint = (await res.json()) as EndpointAnswer;
  expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  r.secrets.push(endpoint.secret!);
  return endpoint;
}

const disable = (id: string) => adminCall('POST', `/admin/webhook-endpoints/${id}/disable`);

async function endpointOf(id: string): Promise<EndpointAnswer> {
  const res = await adminCall('GET', '/admin/webhook-endpoints');
  const { endpoints } = (await res.json()) as { endpoints: EndpointAnswer[] };
  return endpoints.find((e) => e.id === id)!;
}

const sold = (productId: string, user: string) =>
  orderWithEvents(client, app.rt.db, productId, user);

/** The feed's event ids of these orders (what the receiver must get). */
async function feedIds(orderIds: readonly string[]): Promise<string[]> {
  const rows = await app.rt.db
    .selectFrom('order_events')
    .select('id')
    .where('order_id', 'in', orderIds)
    .orderBy('txid')
    .orderBy('position')
    .execute();
  return rows.map((r) => r.id);
}

const ackedOf = (r: Receiver, orderIds: readonly string[]) =>
  r.acked().filter((a) => orderIds.includes(a.orderId));

async function allAcked(r: Receiver, orderIds: readonly string[]) {
  const want = await feedIds(orderIds);
  await waitFor(
    () => `${want.length} events acknowledged (got ${ackedOf(r, orderIds).length})`,
    async () => {
      const got = new Set(ackedOf(r, orderIds).map((a) => a.id));
      return want.every((id) => got.has(id));
    },
    60_000,
    20,
  );
  return want;
}

/** Per order, the versions acknowledged after dedup never go back; none came before its row. */
function expectOrdered(arrivals: readonly Arrival[]) {
  const last = new Map<string, number>();
  for (const a of arrivals) {
    expect(a.version, `${a.id} after version ${last.get(a.orderId)}`).toBeGreaterThan(
      last.get(a.orderId) ?? 0,
    );
    last.set(a.orderId, a.version);
  }
  for (const a of arrivals) {
    expect(a.rowVersion, `${a.id}: the row when it arrived`).not.toBeNull();
    expect(a.rowVersion!).toBeGreaterThanOrEqual(a.version);
    expect(a.verified, `${a.id} signed`).toBe(true);
    // the order at that version, an object (as GET /orders/:id shows it)
    expect(a.data, `${a.id}'s data`).toMatchObject({ orderId: a.orderId, version: a.version });
  }
}

/** Three orders: paid (created, paid), cancelled (created, cancelled, returned), final. */
async function lifecycles() {
  const p = newProduct();
  await client.seed(p, {
    total: 10,
    payWithinSeconds: 600,
    price: { amount: 900, currency: 'EUR' },
  });
  const [a, b] = [newUser(), newUser()];
  const paid = await sold(p, a);
  const intent = await client.intentOf(paid, a);
  const pay = await client.hook({
    type: 'payment.succeeded',
    orderId: paid,
    paymentIntentId: intent.paymentIntentId,
    paymentId: `psp-${paid}`,
    amount: 900,
    currency: 'EUR',
  });
  expect(pay.status).toBe(200);
  const cancelled = await sold(p, b);
  expect((await client.cancel(cancelled, b)).status).toBe(200);
  const f = newProduct();
  await client.seed(f, { total: 2 });
  const final = await sold(f, newUser());
  return [paid, cancelled, final];
}

describe('endpoints', () => {
  it('registers with the secret shown once, lists without it, refuses bad bodies and refused URLs', async () => {
    const r = await receiver();
    const endpoint = await register(r, ['order.paid', 'order.created']);
    expect(endpoint).toMatchObject({ url: r.url, status: 'active' });
    expect(endpoint.events.sort()).toEqual(['order.created', 'order.paid']);
    const listed = await endpointOf(endpoint.id);
    expect(listed).not.toHaveProperty('secret');
    expect(listed).toMatchObject({ id: endpoint.id, pending: 0, deadLetters: 0 });
    for (const body of [
      { url: 'not a url', events: ['*'] },
      { url: r.url, events: [] },
      { url: r.url, events: ['order.shipped'] },
      { url: r.url },
      { url: r.url, events: ['*'], extra: 1 },
    ]) {
      expect((await adminCall('POST', '/admin/webhook-endpoints', body)).status).toBe(400);
    }
    const ftp = await adminCall('POST', '/admin/webhook-endpoints', {
      url: 'ftp://warehouse.example/hooks',
      events: ['*'],
    });
    expect(ftp.status).toBe(422);
    expect(((await ftp.json()) as { type: string }).type).toBe(
      'urn:seckill:problem:receiver-refused',
    );
    expect((await adminCall('POST', '/admin/webhook-endpoints/ep_nope/disable')).status).toBe(404);
    // a wrong admin token changes nothing
    const wrong = {
      authorization: 'Bearer not-the-admin-token-at-all',
      'content-type': 'application/json',
    };
    for (const action of ['disable', 'enable', 'rotate', 'replay', 'retry']) {
      const res = await fetch(`${app.url}/admin/webhook-endpoints/${endpoint.id}/${action}`, {
        method: 'POST',
        headers: wrong,
        body: JSON.stringify({ from: '0.0' }),
      });
      expect(res.status).toBe(403);
    }
    for (const path of [`/${endpoint.id}/dead-letters`, '']) {
      const res = await fetch(`${app.url}/admin/webhook-endpoints${path}`, { headers: wrong });
      expect(res.status).toBe(403);
    }
    const post = await fetch(`${app.url}/admin/webhook-endpoints`, {
      method: 'POST',
      headers: wrong,
      body: JSON.stringify({ url: r.url, events: ['*'] }),
    });
    expect(post.status).toBe(403);
    expect((await endpointOf(endpoint.id)).status).toBe('active');
    expect((await disable(endpoint.id)).status).toBe(200);
  });
});

describe('delivery', () => {
  it('delivers every event of every order, signed, in version order, none before its row; only the types subscribed', async () => {
    const r = await receiver();
    const all = await register(r);
    const paidOnly = await receiver();
    const paidEndpoint = await register(paidOnly, ['order.paid']);
    const orders = await lifecycles();
    const want = await allAcked(r, orders);
    expect(want).toHaveLength(2 + 3 + 1);
    const acked = ackedOf(r, orders);
    expect(acked.map((a) => a.id).sort()).toEqual([...want].sort());
    expectOrdered(acked);
    await waitFor('the paid event', async () => ackedOf(paidOnly, orders).length === 1, 30_000, 20);
    expect(ackedOf(paidOnly, orders).map((a) => a.type)).toEqual(['order.paid']);
    await disable(all.id);
    await disable(paidEndpoint.id);
  });

  it('retries 500s, timeouts and a receiver that dies mid-delivery until it takes them; a retry never overtakes', async () => {
    const r = await receiver();
    const endpoint = await register(r);
    const attempts = new Map<string, number>();
    const answers: Answer[] = [{ status: 500 }, { hang: true }, { die: true }];
    // each event's first three attempts fail: a 500, no answer, the socket cut
    r.answer = (a) => {
      const n = attempts.get(a.id) ?? 0;
      attempts.set(a.id, n + 1);
      return answers[n] ?? { status: 200 };
    };
    const orders = await lifecycles();
    const want = await allAcked(r, orders);
    const mine = r.arrivals.filter((a) => orders.includes(a.orderId));
    // (more when a 200 came after the sender's timeout on a loaded machine)
    for (const id of want) expect(attempts.get(id)).toBeGreaterThanOrEqual(4);
    expectOrdered(ackedOf(r, orders));
    // no attempt at a version before the previous version was acknowledged
    for (const orderId of orders) {
      const of = mine.filter((a) => a.orderId === orderId);
      for (const a of of) {
        if (a.version === 1) continue;
        const prevAck = of.find((p) => p.version === a.version - 1 && p.answered === 200);
        expect(prevAck, `${a.id} tried before version ${a.version - 1} was taken`).toBeDefined();
        expect(prevAck!.seq).toBeLessThan(a.seq);
      }
    }
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    for (const reason of ['5xx', 'timeout', 'network']) {
      expect(metrics).toMatch(
        new RegExp(
          `seckill_webhook_failed_attempts_total\\{endpoint="${endpoint.id}",reason="${reason}"\\} [1-9]`,
        ),
      );
    }
    await disable(endpoint.id);
  });

  it('delivers to a receiver restarted on its port after it died', async () => {
    const r = await receiver();
    const endpoint = await register(r);
    await r.stop();
    const orders = await lifecycles();
    // refused connections meanwhile; then the receiver is back
    await waitFor(
      'failed attempts while it is down',
      async () =>
        (await app.rt.db
          .selectFrom('webhook_lanes')
          .select('attempts')
          .where('endpoint_id', '=', endpoint.id)
          .where('attempts', '>', 0)
          .executeTakeFirst()) !== undefined,
      30_000,
      20,
    );
    await r.start();
    await allAcked(r, orders);
    expectOrdered(ackedOf(r, orders));
    await disable(endpoint.id);
  });

  it('honours Retry-After: the next attempt is set no sooner', async () => {
    const r = await receiver();
    const endpoint = await register(r);
    let first = true;
    r.answer = () => {
      if (!first) return { status: 200 };
      first = false;
      return { status: 503, headers: { 'retry-after': '2' } };
    };
    const p = newProduct();
    await client.seed(p, { total: 2 });
    const before = Date.now();
    const orderId = await sold(p, newUser());
    const lane = await waitFor(
      'the failed attempt',
      () =>
        app.rt.db
          .selectFrom('webhook_lanes')
          .selectAll()
          .where('endpoint_id', '=', endpoint.id)
          .where('subject', '=', orderId)
          .where('attempts', '=', 1)
          .executeTakeFirst(),
      30_000,
      10,
    );
    // the schedule says 40 ms +-20 %; the receiver asked for 2 s
    expect(lane.next_attempt_at!.getTime()).toBeGreaterThanOrEqual(before + 2_000);
    expect(lane.last_error).toBe('answered 503');
    await allAcked(r, [orderId]);
    await disable(endpoint.id);
  });

  it('does not follow a redirect: a 3xx is a failed attempt and the other host is never asked', async () => {
    const elsewhere = await receiver();
    const r = await receiver();
    const endpoint = await register(r);
    r.answer = () => ({ status: 307, headers: { location: elsewhere.url } });
    const p = newProduct();
    await client.seed(p, { total: 2 });
    const orderId = await sold(p, newUser());
    await waitFor(
      'two failed attempts',
      async () => r.arrivals.filter((a) => a.orderId === orderId).length >= 2,
      30_000,
      20,
    );
    expect(elsewhere.arrivals).toEqual([]);
    await disable(endpoint.id);
  });
});

describe('410, dead letters and replay', () => {
  it('410 disables the endpoint; enabled again, what waited is delivered', async () => {
    const r = await receiver();
    const endpoint = await register(r);
    r.answer = () => ({ status: 410 });
    const p = newProduct();
    await client.seed(p, { total: 3 });
    const first = await sold(p, newUser());
    await waitFor(
      'disabled',
      async () => (await endpointOf(endpoint.id)).status === 'disabled',
      30_000,
      20,
    );
    expect((await endpointOf(endpoint.id)).disabledReason).toMatch(/410/);
    const second = await sold(p, newUser());
    r.answer = () => ({ status: 200 });
    expect((await adminCall('POST', `/admin/webhook-endpoints/${endpoint.id}/enable`)).status).toBe(
      200,
    );
    await allAcked(r, [first, second]);
    await disable(endpoint.id);
  });

  it('dead-letters after the schedule, holds the later events behind it, and a replay sends the same ids in order', async () => {
    const r = await receiver();
    const endpoint = await register(r);
    r.answer = () => ({ status: 500 });
    const p = newProduct();
    await client.seed(p, { total: 3, payWithinSeconds: 600 });
    const u = newUser();
    const orderId = await sold(p, u);
    await waitFor(
      'a dead letter',
      async () => (await endpointOf(endpoint.id)).deadLetters === 1,
      60_000,
      20,
    );
    expect(r.arrivals.filter((a) => a.orderId === orderId)).toHaveLength(5);
    // a later event of the order waits behind it
    expect((await client.cancel(orderId, u)).status).toBe(200);
    const res = await adminCall('GET', `/admin/webhook-endpoints/${endpoint.id}/dead-letters`);
    const { deadLetters } = (await res.json()) as {
      deadLetters: Array<{ eventId: string; cursor: string; attempts: number; events: number }>;
    };
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({ eventId: `evt_${orderId}_1`, attempts: 5 });
    await waitFor(
      'the held events',
      async () => (await feedIds([orderId])).length === 3,
      30_000,
      20,
    );
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(`seckill_webhook_dead_letters_total\\{endpoint="${endpoint.id}"\\} 1`),
    );
    expect(r.arrivals.filter((a) => a.orderId === orderId && a.version > 1)).toEqual([]);

    r.answer = () => ({ status: 200 });
    const replay = await adminCall('POST', `/admin/webhook-endpoints/${endpoint.id}/replay`, {
      from: deadLetters[0]!.cursor,
    });
    expect(replay.status).toBe(202);
    expect(((await replay.json()) as { orders: number }).orders).toBeGreaterThanOrEqual(1);
    const want = await allAcked(r, [orderId]);
    expect(
      ackedOf(r, [orderId]).map((a) => a.id),
      'the replay',
    ).toEqual(want);
    expectOrdered(ackedOf(r, [orderId]));
    expect((await endpointOf(endpoint.id)).deadLetters).toBe(0);

    // a replay of what was delivered sends the same ids again
    const taken = (id: string) =>
      r.arrivals.filter((a) => a.id === id && a.answered === 200).length;
    const before = new Map(want.map((id) => [id, taken(id)]));
    await adminCall('POST', `/admin/webhook-endpoints/${endpoint.id}/replay`, { from: '0.0' });
    await waitFor(
      'the ids again',
      async () => want.every((id) => taken(id) > before.get(id)!),
      30_000,
      20,
    );
    expectOrdered(ackedOf(r, [orderId]));
    await disable(endpoint.id);
  });

  it('rotates the secret: both sign for the grace, and the new one verifies', async () => {
    const r = await receiver();
    const endpoint = await register(r);
    const res = await adminCall('POST', `/admin/webhook-endpoints/${endpoint.id}/rotate`);
    expect(res.status).toBe(200);
    const rotated = (await res.json()) as EndpointAnswer;
    expect(rotated.secret).not.toBe(endpoint.secret);
    r.secrets.splice(0, r.secrets.length, rotated.secret!);
    const p = newProduct();
    await client.seed(p, { total: 2 });
    const orderId = await sold(p, newUser());
    await allAcked(r, [orderId]);
    const [arrival] = ackedOf(r, [orderId]);
    expect(arrival).toMatchObject({ verified: true, signatures: 2 });
    await disable(endpoint.id);
  });
});

describe('seckill webhooks', () => {
  const cli = async (args: string[], env: Record<string, string> = {}) => {
    const run = runCli(['webhooks', ...args], {
      DATABASE_URL: ns.databaseUrl,
      REDIS_URL: ns.redisUrl,
      KEY_PREFIX: ns.id,
      ...env,
    });
    return { code: await run.exited, out: run.stdout(), err: run.stderr() };
  };

  it('adds (the secret printed once), lists, disables; refuses a private URL and a bad flag', async () => {
    const refused = await cli(['add', '--url', 'http://127.0.0.1:9/hooks']);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/private.*WEBHOOK_ALLOW_PRIVATE/);
    const added = await cli(
      ['add', '--url', 'http://127.0.0.1:9/hooks', '--events', 'order.paid'],
      {
        WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    );
    expect(added.code, added.err).toBe(0);
    const endpoint = JSON.parse(added.out) as EndpointAnswer;
    expect(endpoint).toMatchObject({ events: ['order.paid'], status: 'active' });
    expect(endpoint.secret).toMatch(/^whsec_/);
    const disabled = await cli(['disable', '--id', endpoint.id]);
    expect(JSON.parse(disabled.out)).toMatchObject({ id: endpoint.id, status: 'disabled' });
    const listed = JSON.parse((await cli(['list'])).out) as EndpointAnswer[];
    const mine = listed.find((e) => e.id === endpoint.id)!;
    expect(mine.status).toBe('disabled');
    expect(mine).not.toHaveProperty('secret');
    const bad = await cli(['replay', '--id', endpoint.id, '--from', 'yesterday']);
    expect(bad.code).toBe(2);
    expect((await cli(['ship'])).code).toBe(2);
  }, 300_000);
});

describe('the receiver of docs/events.md', () => {
  it('is examples/webhook-receiver.mjs, and it verifies and prints the events of a sale', async () => {
    const root = join(import.meta.dirname, '..', '..');
    const file = readFileSync(join(root, 'examples', 'webhook-receiver.mjs'), 'utf8');
    expect(readFileSync(join(root, 'docs', 'events.md'), 'utf8')).toContain(
      `\`\`\`js\n${file}\`\`\``,
    );
    const port = await freePort();
    const res = await adminCall('POST', '/admin/webhook-endpoints', {
      url: `http://127.0.0.1:${port}/`,
      events: ['*'],
    });
    const endpoint = (await res.json()) as EndpointAnswer;
    const child = spawn(process.execPath, [join(root, 'examples', 'webhook-receiver.mjs')], {
      cwd: root,
      env: { ...process.env, PORT: String(port), WEBHOOK_SECRET: endpoint.secret! },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    try {
      const p = newProduct();
      await client.seed(p, { total: 2 });
      const orderId = await sold(p, newUser());
      await waitFor(
        () => `the line of ${orderId} (got ${out})`,
        async () => out.includes(`order.created ${orderId} 1\n`),
        30_000,
        20,
      );
    } finally {
      child.kill();
      await disable(endpoint.id);
    }
  });
});
