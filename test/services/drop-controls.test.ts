/**
 * The operator's controls of a drop, through the real API (two processes, each with its catalogue
 * and admitter), Redis (one server and the Cluster) and PostgreSQL: pause and resume (purchases
 * refused from memory and by every segment, the room admits nobody, waiting shoppers told
 * `paused` with their place kept), end now (ended to everyone, an unpaid order still pays), the
 * room's pace live, units put on sale and taken off (never a sold one). After each the line is
 * intact, every shopper's limit holds, and reconciliation is exact; each is in the audit log.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAUSED_STARTS_AT } from '../../src/inventory/index.js';
import { META_FIELD, ROOM_FIELD, STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { countCommands } from '../../src/redis/command-count.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, runCli, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { paymentClient } from '../support/payments.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'a-payment-webhook-secret-for-the-drop-tests-0123';
let a: RunningApp;
let b: RunningApp;

beforeAll(async () => {
  const config = ns.config({
    SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-drop-tests-0123456',
    PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ROOM_TICK_MS: '50',
    ROOM_LEASE_MS: '1000',
  });
  a = await startApp(config, { worker: true });
  b = await startApp(config);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const admin = {
  authorization: `Bearer ${ns.adminToken}`,
  'content-type': 'application/json',
  'x-operator': 'drop-test',
};
const newProduct = () => `d${randomBytes(4).toString('hex')}`;
const payments = paymentClient(() => a.url, WEBHOOK_SECRET, ns.adminToken);

const seed = (productId: string, body: Record<string, unknown>) =>
  seedSale(
    a.url,
    productId,
    { strategy: 'segmented', segments: 2, ...body },
    { headers: { 'x-operator': admin['x-operator'] } },
  ).then((s) => s.epoch);

interface Done {
  action: string;
  changed: boolean;
  epoch: number;
  units?: number;
  product: { status: string; paused: boolean; total: number; remaining: number };
  type?: string;
  detail?: string;
}

async function control(
  productId: string,
  action: string,
  body?: unknown,
  method = 'POST',
  at = a,
): Promise<{ status: number; body: Done }> {
  const res = await fetch(`${at.url}/admin/products/${productId}/${action}`, {
    method,
    headers: admin,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Done };
}

async function buy(at: RunningApp, productId: string, user: string, extra = {}) {
  const res = await fetch(`${at.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user, ...extra },
    body: JSON.stringify({ productId }),
  });
  const body = (await res.json()) as { orderId?: string; type?: string };
  return {
    status: res.status,
    code: body.type?.replace('urn:seckill:problem:', ''),
    orderId: body.orderId,
    retryAfter: res.headers.get('retry-after'),
  };
}

/** Buys, again while busy (a lock timeout, a store hiccup: not a paused sale). */
async function buyOnce(at: RunningApp, productId: string, user: string, extra = {}) {
  const overdue = deadlineOf(`an answer but busy for ${user}`, 50_000);
  for (;;) {
    overdue();
    const r = await buy(at, productId, user, extra);
    if (r.status === 503 && r.code !== 'sale-paused') continue;
    return r;
  }
}

async function reconcile(productId: string) {
  return waitFor(
    'a clean reconciliation',
    async () => {
      const res = await fetch(`${a.url}/admin/products/${productId}/reconcile`, {
        method: 'POST',
        headers: admin,
      });
      const r = (await res.json()) as {
        ok: boolean;
        total: number;
        added: number;
        remaining: number;
        pending: number;
        persisted: number;
        problems: string[];
      };
      return r.ok && r.pending === 0 && r;
    },
    30_000,
  );
}

async function auditActions(productId: string): Promise<string[]> {
  const res = await fetch(`${a.url}/admin/audit?productId=${productId}`, { headers: admin });
  const { entries } = (await res.json()) as {
    entries: Array<{ action: string; outcome: string; actor: { operator?: string } }>;
  };
  for (const e of entries) expect(e.actor.operator).toBe('drop-test');
  return entries.reverse().map((e) => `${e.action}:${e.outcome}`);
}

/** Both processes' views say so (each reads the meta again on the change notice). */
const bothHeard = (productId: string, paused: boolean) =>
  waitFor(
    `both processes to hear paused=${paused}`,
    async () =>
      [a, b].every((p) => p.rt.inventory.catalogue.known(productId)?.paused === paused) ||
      // a view not loaded yet loads the meta as it is now
      (await Promise.all([a, b].map((p) => p.rt.inventory.catalogue.get(productId)))).every(
        (v) => v?.paused === paused,
      ),
    10_000,
    20,
  );

async function segmentStarts(productId: string, segments: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < segments; i++) {
    out.push(
      Number(await a.rt.redis.hget(a.rt.keys.segment(productId, i).state, STATE_FIELD.startsAt)),
    );
  }
  return out;
}

describe('pause and resume', () => {
  it('refuses every purchase while paused (from memory, and by every segment), then sells again; the limit holds', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, limitPerUser: 1 });
    expect((await buyOnce(b, productId, 'early')).status).toBe(202);

    const paused = await control(productId, 'pause');
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      action: 'pause',
      changed: true,
      product: { status: 'paused', paused: true, remaining: 9 },
    });
    expect(await segmentStarts(productId, 2)).toEqual([PAUSED_STARTS_AT, PAUSED_STARTS_AT]);
    await bothHeard(productId, true);
    // answered from memory: no Redis command, a clear problem and when to come back
    const count = countCommands(b.rt.redis);
    try {
      for (let i = 0; i < 10; i++) {
        const r = await buy(b, productId, `p${i}`);
        expect(r).toMatchObject({ status: 503, code: 'sale-paused', retryAfter: '5' });
      }
      expect(Object.fromEntries(count.byName)).toEqual({});
    } finally {
      count.stop();
    }
    // a keyed purchase goes to Redis: the segments refuse it as paused, and sell nothing
    const keyed = await buy(a, productId, 'keyed', { 'idempotency-key': 'k1' });
    expect(keyed).toMatchObject({ status: 503, code: 'sale-paused' });
    // a second pause changes nothing
    expect((await control(productId, 'pause', undefined, 'POST', b)).body.changed).toBe(false);

    const resumed = await control(productId, 'resume', undefined, 'POST', b);
    expect(resumed.body).toMatchObject({
      changed: true,
      product: { status: 'live', paused: false },
    });
    expect(await segmentStarts(productId, 2)).toEqual([0, 0]);
    await bothHeard(productId, false);
    // the same key runs again (a paused answer is not stored), and the early buyer's limit held
    expect((await buyOnce(a, productId, 'keyed', { 'idempotency-key': 'k1' })).status).toBe(202);
    expect(await buyOnce(b, productId, 'early')).toMatchObject({
      status: 409,
      code: 'limit-reached',
    });
    for (let i = 0; i < 8; i++)
      expect((await buyOnce(i % 2 ? a : b, productId, `late${i}`)).status).toBe(202);
    expect((await buyOnce(a, productId, 'one-too-many')).code).toBe('sold-out');
    const r = await reconcile(productId);
    expect(r).toMatchObject({ total: 10, added: 0, remaining: 0, persisted: 10 });
    expect(await auditActions(productId)).toEqual([
      'seed:done',
      'pause:done',
      'pause:done',
      'resume:done',
    ]);
  });

  it('serializes controls: pauses and resumes at once from both processes leave the segments as the meta says', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, segments: 4 });
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        control(productId, i % 2 ? 'resume' : 'pause', undefined, 'POST', i % 3 ? a : b),
      ),
    );
    const meta = await a.rt.redis.hget(a.rt.keys.product(productId).meta, META_FIELD.paused);
    const starts = await segmentStarts(productId, 4);
    expect(starts).toEqual(Array(4).fill(meta === '1' ? PAUSED_STARTS_AT : 0));
  });
});

describe('a control cut off midway', () => {
  it('is finished by its retry: a pause whose meta was written before its segments pauses every segment', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, segments: 4 });
    // what a pause leaves when its process dies after the meta's write
    await a.rt.redis.hset(a.rt.keys.product(productId).meta, META_FIELD.paused, '1');
    const again = await control(productId, 'pause');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ changed: false, product: { paused: true } });
    expect(await segmentStarts(productId, 4)).toEqual(Array(4).fill(PAUSED_STARTS_AT));
  });

  it('is undone by a resume: segments left paused under an unpaused meta sell again', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, segments: 4 });
    // what a pause leaves when its process dies after some of its segments' writes
    for (const seg of [0, 1, 2, 3]) {
      await a.rt.redis.hset(
        a.rt.keys.segment(productId, seg).state,
        STATE_FIELD.startsAt,
        PAUSED_STARTS_AT,
      );
    }
    const resumed = await control(productId, 'resume');
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ changed: false, product: { paused: false } });
    expect(await segmentStarts(productId, 4)).toEqual(Array(4).fill(0));
    for (let i = 0; i < 4; i++) expect((await buyOnce(b, productId, `cut${i}`)).status).toBe(202);
  });
});

describe('a room paused, paced, ended', () => {
  const room = { admitPerSecond: 50, maxActive: 2, admittedForSeconds: 60 };

  async function join(at: RunningApp, productId: string, user: string) {
    const res = await fetch(`${at.url}/products/${productId}/queue`, {
      method: 'POST',
      headers: { 'x-user-id': user },
    });
    expect(res.status).toBe(200);
  }
  async function poll(at: RunningApp, productId: string, user: string) {
    const res = await fetch(`${at.url}/products/${productId}/queue`, {
      headers: { 'x-user-id': user },
    });
    return (await res.json()) as {
      state: string;
      position: number | null;
      saleToken?: string;
      pollAfterSeconds: number | null;
      final?: boolean;
      detail?: string;
    };
  }
  /** The shopper's sale token once a poll of `at` answers them admitted. */
  const tokenOf = (at: RunningApp, productId: string, user: string) =>
    waitFor(
      `${user}'s admission`,
      async () => {
        const v = await poll(at, productId, user);
        return v.state === 'admitted' && v.saleToken;
      },
      10_000,
      20,
    );
  const served = async (productId: string, epoch: number) =>
    Number(await a.rt.redis.hget(a.rt.keys.room(productId, epoch).room, ROOM_FIELD.served));
  const ticketsOf = (productId: string, epoch: number) =>
    a.rt.redis.hgetall(a.rt.keys.room(productId, epoch).places);
  /** Waits for `n` more admitter ticks (the room hash's lastAt moves at each). */
  async function ticks(productId: string, epoch: number, n: number) {
    const key = a.rt.keys.room(productId, epoch).room;
    let last = await a.rt.redis.hget(key, 'lastAt');
    for (let i = 0; i < n; i++) {
      const was = last;
      last = await waitFor(
        'an admitter tick',
        async () => {
          const now = await a.rt.redis.hget(key, 'lastAt');
          return now !== was && now;
        },
        10_000,
        20,
      );
    }
  }

  it('a paused room admits nobody and tells its line paused, places kept; resumed, it admits in order', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 20, waitingRoom: room });
    const users = Array.from({ length: 6 }, (_, i) => `w${i}`);
    for (const u of users) await join(u.endsWith('1') ? b : a, productId, u);
    await waitFor('two admitted', async () => (await served(productId, epoch)) === 2, 10_000, 20);
    const before = await ticketsOf(productId, epoch);
    // joins before the first tick are the lobby, shuffled into the line at the opening: who holds which
    const byTicket = Object.entries(before)
      .sort((x, y) => Number(x[1]) - Number(y[1]))
      .map(([u]) => u);
    const [first, second] = byTicket as [string, string];
    const last = byTicket[5]!;
    const token = await tokenOf(a, productId, first);

    expect((await control(productId, 'pause')).status).toBe(200);
    await bothHeard(productId, true);
    // a seat frees (as a purchase frees it), yet nobody is admitted however many ticks pass
    expect(await buy(a, productId, first, { 'sale-token': token })).toMatchObject({
      status: 503,
      code: 'sale-paused',
    });
    await a.rt.redis.zrem(a.rt.keys.room(productId, epoch).active, second);
    await ticks(productId, epoch, 5);
    expect(await served(productId, epoch)).toBe(2);
    for (const at of [a, b]) {
      const w5 = await poll(at, productId, last);
      expect(w5).toMatchObject({
        state: 'paused',
        position: 4,
        pollAfterSeconds: expect.any(Number),
      });
      expect(w5.detail).toMatch(/place is kept/);
    }
    // the storefront's GET says so too
    const product = (await (await fetch(`${b.url}/products/${productId}`)).json()) as {
      status: string;
      paused: boolean;
      waitingRoom: { state: string; maxActive: number };
    };
    expect(product).toMatchObject({
      status: 'paused',
      paused: true,
      waitingRoom: { state: 'paused', maxActive: 2 },
    });

    expect((await control(productId, 'resume')).status).toBe(200);
    expect((await buyOnce(b, productId, first, { 'sale-token': token })).status).toBe(202);
    // pace: everyone left admitted at once
    const paced = await control(
      productId,
      'waiting-room',
      { maxActive: 10, admitPerSecond: 100 },
      'PATCH',
    );
    expect(paced.status).toBe(200);
    await waitFor('all admitted', async () => (await served(productId, epoch)) === 6, 10_000, 20);
    // the line is the line it was: same tickets, admitted in ticket order
    expect(await ticketsOf(productId, epoch)).toEqual(before);
    const admitted = await a.rt.redis.hgetall(a.rt.keys.room(productId, epoch).admitted);
    const order = Object.entries(before)
      .sort((x, y) => Number(x[1]) - Number(y[1]))
      .map(([u]) => u);
    const times = order.map((u) => Number(admitted[u]));
    expect([...times].sort((x, y) => x - y)).toEqual(times);
    expect(await auditActions(productId)).toEqual([
      'seed:done',
      'pause:done',
      'resume:done',
      'waiting-room:done',
    ]);
  });

  it('ends now: ended to the line and the buyers; an unpaid order still pays; nothing more to change', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 10,
      payWithinSeconds: 300,
      waitingRoom: { ...room, maxActive: 1 },
    });
    await join(a, productId, 'e0');
    await join(b, productId, 'e1');
    await waitFor('one admitted', async () => (await served(productId, epoch)) === 1, 10_000, 20);
    const places = await ticketsOf(productId, epoch);
    const [e0, e1] = Object.keys(places).sort((x, y) => Number(places[x]) - Number(places[y])) as [
      string,
      string,
    ];
    const token = await tokenOf(a, productId, e0);
    const bought = await buyOnce(a, productId, e0, { 'sale-token': token });
    expect(bought.status).toBe(202);

    const ended = await control(productId, 'end');
    expect(ended.status).toBe(200);
    expect(ended.body.product.status).toBe('ended');
    for (const at of [a, b]) {
      await waitFor(
        'ended heard',
        async () => (await poll(at, productId, 'e1')).state === 'ended',
        10_000,
        20,
      );
    }
    // admitted e0, with a token still valid, is refused as the sale ended
    expect((await buy(b, productId, e0, { 'sale-token': token })).code).toBe('ended');
    // e0's order keeps its payment window
    const intent = await payments.intentOf(bought.orderId!, e0);
    const paid = await payments.hook({
      type: 'payment.succeeded',
      orderId: bought.orderId,
      paymentIntentId: intent.paymentIntentId,
      paymentId: `pay-${productId}`,
    });
    expect(paid.status).toBe(200);
    for (const action of ['pause', 'resume', 'end']) {
      const r = await control(productId, action);
      expect(r.status, action).toBe(409);
      expect(r.body.type).toMatch(/sale-over$/);
    }
    expect((await control(productId, 'units', { add: 5 })).status).toBe(409);
    const r = await reconcile(productId);
    expect(r).toMatchObject({ total: 10, remaining: 9, persisted: 1 });
  });

  it("tells a shopper whose turn ran out 'expired', not admitted with a dead token", async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 5,
      waitingRoom: { ...room, admittedForSeconds: 5 },
    });
    await join(a, productId, 'x0');
    await waitFor('x0 admitted', async () => (await served(productId, epoch)) === 1, 10_000, 20);
    const token = await tokenOf(b, productId, 'x0');
    const expired = await waitFor(
      'the admission to run out',
      async () => {
        const v = await poll(b, productId, 'x0');
        return v.state === 'expired' && v;
      },
      20_000,
      200,
    );
    expect(expired).toMatchObject({ position: null, pollAfterSeconds: null });
    expect(expired.saleToken).toBeUndefined();
    expect(expired.detail).toMatch(/turn ran out/);
    expect((await buy(a, productId, 'x0', { 'sale-token': token })).status).toBe(403);
  });

  it('says whether a sold-out is final: no payment window, final; with one, units may come back', async () => {
    for (const payWithinSeconds of [undefined, 300]) {
      const productId = newProduct();
      const epoch = await seed(productId, {
        total: 1,
        ...(payWithinSeconds && { payWithinSeconds }),
        waitingRoom: { ...room, maxActive: 1 },
      });
      await join(a, productId, 's0');
      await join(a, productId, 's1');
      await waitFor('one admitted', async () => (await served(productId, epoch)) === 1, 10_000, 20);
      const places = await ticketsOf(productId, epoch);
      const [s0, s1] = Object.keys(places).sort(
        (x, y) => Number(places[x]) - Number(places[y]),
      ) as [string, string];
      const token = await tokenOf(a, productId, s0);
      expect((await buyOnce(b, productId, s0, { 'sale-token': token })).status).toBe(202);
      const view = await waitFor(
        'sold-out heard',
        async () => {
          const v = await poll(b, productId, s1);
          return v.state === 'sold-out' && v;
        },
        10_000,
        20,
      );
      if (payWithinSeconds) {
        expect(view).toMatchObject({ final: false, pollAfterSeconds: expect.any(Number) });
        expect(view.detail).toMatch(/may still expire/);
      } else {
        expect(view).toMatchObject({ final: true, pollAfterSeconds: null });
      }
    }
  });

  it('refuses a pace without a room (409), and bad bodies (400) changing nothing', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5 });
    const none = await control(productId, 'waiting-room', { maxActive: 3 }, 'PATCH');
    expect(none.status).toBe(409);
    expect(none.body.type).toMatch(/no-waiting-room$/);
    for (const bad of [
      {},
      { maxActive: 0 },
      { admitPerSecond: 1.5 },
      { admittedForSeconds: 9 },
      [],
    ]) {
      expect(
        (await control(productId, 'waiting-room', bad, 'PATCH')).status,
        JSON.stringify(bad),
      ).toBe(400);
    }
    for (const bad of [{}, { add: 0 }, { add: 1, withdraw: 1 }, { withdraw: -2 }, { add: '3' }]) {
      expect((await control(productId, 'units', bad)).status, JSON.stringify(bad)).toBe(400);
    }
    expect((await control('no-such-product', 'pause')).status).toBe(404);
    expect((await control(productId, 'pause', undefined, 'POST')).status).toBe(200);
    const badName = await fetch(`${a.url}/admin/products/${productId}/resume`, {
      method: 'POST',
      headers: { ...admin, 'x-operator': 'no;way' },
    });
    expect(badName.status).toBe(400);
    expect(await auditActions(productId)).toEqual([
      'seed:done',
      'waiting-room:refused',
      'pause:done',
    ]);
  });
});

describe('who may', () => {
  it('refuses every control to a wrong token (403) and to no token (401), changing nothing', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5 });
    const routes: Array<[string, string, unknown?]> = [
      ['POST', 'pause'],
      ['POST', 'resume'],
      ['POST', 'end'],
      ['POST', 'units', { add: 1 }],
      ['PATCH', 'waiting-room', { maxActive: 1 }],
    ];
    for (const [authorization, status] of [
      ['Bearer not-the-admin-token-at-all', 403],
      [undefined, 401],
    ] as const) {
      for (const [method, action, body] of routes) {
        const res = await fetch(`${b.url}/admin/products/${productId}/${action}`, {
          method,
          headers: {
            'content-type': 'application/json',
            ...(authorization && { authorization }),
          },
          ...(body !== undefined && { body: JSON.stringify(body) }),
        });
        expect(res.status, `${action} ${authorization ?? 'none'}`).toBe(status);
      }
    }
    expect(await auditActions(productId)).toEqual(['seed:done']);
  });
});

describe('units', () => {
  it('puts units on a sold-out sale: exactly that many more sell, reconciliation exact', async () => {
    const productId = newProduct();
    await seed(productId, { total: 4 });
    for (let i = 0; i < 4; i++) expect((await buyOnce(b, productId, `u${i}`)).status).toBe(202);
    expect((await buyOnce(b, productId, 'u4')).code).toBe('sold-out');
    const added = await control(productId, 'units', { add: 3 }, 'POST', b);
    expect(added.body).toMatchObject({ units: 3, product: { total: 7, remaining: 3 } });
    let sold = 0;
    for (let i = 4; i < 10; i++)
      if ((await buyOnce(i % 2 ? a : b, productId, `u${i}`)).status === 202) sold++;
    expect(sold).toBe(3);
    expect(await reconcile(productId)).toMatchObject({
      total: 7,
      added: 3,
      remaining: 0,
      persisted: 7,
    });
  });

  it('takes off only unsold units: refuses more than are unsold, never a sold one', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, segments: 4 });
    for (let i = 0; i < 2; i++) expect((await buyOnce(a, productId, `v${i}`)).status).toBe(202);
    const tooMany = await control(productId, 'units', { withdraw: 9 });
    expect(tooMany.status).toBe(409);
    expect(tooMany.body.type).toMatch(/not-enough-units$/);
    const taken = await control(productId, 'units', { withdraw: 5 });
    expect(taken.body).toMatchObject({ units: -5, product: { total: 5, remaining: 3 } });
    let sold = 0;
    for (let i = 2; i < 8; i++) if ((await buyOnce(b, productId, `v${i}`)).status === 202) sold++;
    expect(sold).toBe(3);
    expect(await reconcile(productId)).toMatchObject({
      total: 5,
      seeded: 10,
      added: 0,
      taken: 5,
      remaining: 0,
      persisted: 5,
    });
    expect(await auditActions(productId)).toEqual(['seed:done', 'units:refused', 'units:done']);
  });
});

describe('reseeds', () => {
  const reseed = (productId: string, body: Record<string, unknown>, query = '') =>
    fetch(`${a.url}/admin/products/${productId}${query}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ strategy: 'segmented', segments: 3, ...body }),
    });

  it("carries every shopper's purchases into the next sale's limit, unless told to discard them", async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, limitPerUser: 1 });
    for (const u of ['alice', 'bob']) expect((await buyOnce(b, productId, u)).status).toBe(202);
    expect((await control(productId, 'end')).status).toBe(200);
    // the next drop: another layout, the same limit; alice and bob bought theirs already
    const next = await reseed(productId, { total: 5, limitPerUser: 1 });
    expect(next.status).toBe(200);
    expect(await next.json()).toMatchObject({ epoch: 2, carried: 2 });
    const again = await buyOnce(a, productId, 'alice');
    expect(again).toMatchObject({ status: 409, code: 'limit-reached', orderId: undefined });
    expect((await buyOnce(b, productId, 'carol')).status).toBe(202);
    expect(await reconcile(productId)).toMatchObject({ total: 5, remaining: 4, persisted: 1 });
    // a limit of 2 next time: one more each, the carried one counting
    expect((await control(productId, 'end')).status).toBe(200);
    expect(await (await reseed(productId, { total: 5, limitPerUser: 2 })).json()).toMatchObject({
      epoch: 3,
      carried: 3,
    });
    expect((await buyOnce(a, productId, 'alice')).status).toBe(202);
    expect((await buyOnce(a, productId, 'alice')).code).toBe('limit-reached');
    expect(await reconcile(productId)).toMatchObject({ total: 5, remaining: 4, persisted: 1 });
    // told to discard them: alice starts again
    expect((await control(productId, 'end')).status).toBe(200);
    const fresh = await reseed(
      productId,
      { total: 5, limitPerUser: 1 },
      '?discard=purchase-counts',
    );
    expect(await fresh.json()).toMatchObject({ epoch: 4, carried: 0 });
    expect((await buyOnce(b, productId, 'alice')).status).toBe(202);
  });

  it('refuses a reseed that would throw a line away unless the request says so; the line stays', async () => {
    const productId = newProduct();
    const startsAt = new Date(Date.now() + 3_600_000).toISOString();
    const room = { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 };
    await seed(productId, { total: 10, startsAt, waitingRoom: room });
    for (const u of ['q1', 'q2']) {
      const joined = await fetch(`${a.url}/products/${productId}/queue`, {
        method: 'POST',
        headers: { 'x-user-id': u },
      });
      expect(joined.status).toBe(200);
    }
    for (const query of ['', '?force=true', '?discard=purchase-counts']) {
      const refused = await reseed(productId, { total: 20, startsAt, waitingRoom: room }, query);
      expect(refused.status, query).toBe(409);
      const body = (await refused.json()) as { type: string; detail: string };
      expect(body.type).toMatch(/line-discarded$/);
      expect(body.detail).toContain('holds 2 shoppers');
    }
    const poll = await fetch(`${b.url}/products/${productId}/queue`, {
      headers: { 'x-user-id': 'q1' },
    });
    expect(poll.status).toBe(200);
    expect(
      (await reseed(productId, { total: 20, startsAt, waitingRoom: room }, '?discard=bogus'))
        .status,
    ).toBe(400);
    const done = await reseed(
      productId,
      { total: 20, startsAt, waitingRoom: room },
      '?discard=line',
    );
    expect(done.status).toBe(200);
    expect(await auditActions(productId)).toEqual([
      'seed:done',
      'seed:refused',
      'seed:refused',
      'seed:refused',
      'seed:done',
    ]);
  });
});

describe('seckill drop (the CLI)', () => {
  /** `seckill <args>` against this file's stores, its output and exit code. */
  async function cli(...args: string[]) {
    const run = runCli(args, {
      PATH: process.env.PATH ?? '',
      ...(ns.clustered
        ? {
            REDIS_CLUSTER_NODES: ns.redisTarget
              .cluster!.map((n) => `${n.host}:${n.port}`)
              .join(','),
          }
        : { REDIS_URL: ns.redisUrl }),
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
      LOG_LEVEL: 'silent',
    });
    return { code: await run.exited, out: run.stdout(), err: run.stderr() };
  }

  it('pauses, adds units, paces and resumes as the API does; each in the audit log as the CLI', async () => {
    const productId = newProduct();
    await seed(productId, {
      total: 4,
      waitingRoom: { admitPerSecond: 5, maxActive: 5, admittedForSeconds: 60 },
    });
    const paused = await cli('drop', productId, 'pause', '--operator', 'night shift');
    expect(paused, paused.err).toMatchObject({ code: 0 });
    expect(paused.out).toMatch(/^pause ".*" \(epoch 1\): done; now paused, 4 of 4 left\n$/);
    await bothHeard(productId, true);
    const units = await cli('drop', productId, 'units', '--add', '6', '--json');
    expect(units.code).toBe(0);
    expect(JSON.parse(units.out)).toMatchObject({ action: 'units', units: 6, status: 'paused' });
    expect((await cli('drop', productId, 'pace', '--max-active', '9')).code).toBe(0);
    expect((await cli('drop', productId, 'resume')).code).toBe(0);
    await bothHeard(productId, false);
    const over = await cli('drop', productId, 'units', '--withdraw', '11');
    expect(over.code).toBe(1);
    expect(over.err).toMatch(/only 10 units .* are unsold/);
    const res = await fetch(`${a.url}/admin/audit?productId=${productId}`, { headers: admin });
    const { entries } = (await res.json()) as {
      entries: Array<{
        action: string;
        outcome: string;
        actor: { via: string; operator?: string };
      }>;
    };
    expect(entries.reverse().map((e) => `${e.action}:${e.outcome}:${e.actor.via}`)).toEqual([
      'seed:done:token',
      'pause:done:cli',
      'units:done:cli',
      'waiting-room:done:cli',
      'resume:done:cli',
      'units:refused:cli',
    ]);
    expect(entries[1]!.actor.operator).toBe('night shift');
    expect(await reconcile(productId)).toMatchObject({ total: 10, added: 6, remaining: 10 });
    // six CLI processes one after the other, each loading the CLI and connecting to both stores
  }, 180_000);

  it('refuses a usage mistake with exit 2 and changes nothing', async () => {
    const productId = newProduct();
    await seed(productId, { total: 4 });
    const runs = await Promise.all(
      [
        ['units'],
        ['units', '--add', '0'],
        ['units', '--add', '2', '--withdraw', '1'],
        ['pace'],
        ['pace', '--max-active', 'x'],
        ['halt'],
        ['pause', '--operator', 'a;b'],
      ].map(async (args) => ({ args, run: await cli('drop', productId, ...args) })),
    );
    for (const { args, run } of runs) expect(run.code, args.join(' ')).toBe(2);
    expect(await auditActions(productId)).toEqual(['seed:done']);
    expect(await reconcile(productId)).toMatchObject({ total: 4, remaining: 4 });
  }, 120_000);
});
