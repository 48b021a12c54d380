/**
 * The waiting room through the real API, two API processes (each with its admitter and its
 * catalog), Redis (standalone and Cluster) and PostgreSQL: one place per shopper, the lobby
 * shuffled once at the opening (under a pinned seed), FIFO after it, no purchase without
 * admission, sold out reaching every waiting shopper, admission resuming on a return, and the
 * admitter's process killed mid-sale.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { schemaDefault } from '../../src/config/env-docs.js';
import type { Config } from '../../src/config/index.js';
import { RoomStore } from '../../src/inventory/index.js';
import { NOT_HERE_MS } from '../../src/services/room/waiting-room.js';
import { admissionUnits } from '../../src/inventory/rooms/admitter.js';
import { countCommands, type CommandCount } from '../../src/redis/command-count.js';
import { scriptNameOf } from '../../src/redis/scripts.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { ROOM_FIELD } from '../../src/inventory/records/hash-fields.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
const SEED = 20_260_127;
let a: RunningApp;
let b: RunningApp;
let config: Config;

beforeAll(async () => {
  const env = {
    SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
    // joins are limited per shopper: 10 at once, then one a minute
    RATE_LIMIT_USER: '1/m',
    RATE_LIMIT_USER_BURST: '10',
    ROOM_LEASE_MS: '1000',
    ROOM_TICK_MS: '50',
    SWEEP_INTERVAL_MS: '300',
    SWEEP_MIN_AGE_MS: '1000',
  };
  // the lobby's shuffle pinned: a test's own setting, no variable
  const loaded = ns.config(env);
  config = { ...loaded, room: { ...loaded.room, shuffleSeed: SEED } };
  a = await startApp(config, { worker: true });
  b = await startApp(config);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const users = (n: number) =>
  Array.from({ length: n }, (_, i) => `u${i}x${randomBytes(3).toString('hex')}`);

interface Place {
  state: string;
  position: number | null;
  aheadOfYou: number | null;
  estimatedWaitSeconds: { p50: number; p90: number } | null;
  pollAfterSeconds: number | null;
  saleToken?: string;
}

const seed = (productId: string, body: Record<string, unknown>) =>
  seedSale(a.url, productId, { strategy: 'segmented', segments: 2, ...body }).then((s) => s.epoch);

const room = (settings: Partial<Record<string, number>> = {}) => ({
  admitPerSecond: 20,
  maxActive: 100,
  admittedForSeconds: 60,
  ...settings,
});

async function join(app: RunningApp, productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    method: 'POST',
    headers: { 'x-user-id': user },
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as Place,
  };
}

async function poll(app: RunningApp, productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    headers: { 'x-user-id': user },
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (await res.json()) as Place & { type?: string },
  };
}

/** The shopper's sale token, once a poll answers them admitted. */
const tokenOf = (app: RunningApp, productId: string, user: string) =>
  waitFor(
    'admission',
    async () => {
      const r = await poll(app, productId, user);
      return r.body.state === 'admitted' && r.body.saleToken;
    },
    10_000,
    50,
  );

async function buy(productId: string, user: string, saleToken?: string, quantity = 1) {
  const overdue = deadlineOf(`an answer but 503 for ${user}`, 50_000);
  for (;;) {
    overdue();
    const res = await fetch(`${b.url}/seckill`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-user-id': user,
        ...(saleToken && { 'sale-token': saleToken }),
      },
      body: JSON.stringify({ productId, quantity }),
    });
    const body = (await res.json()) as { orderId?: string; type?: string };
    if (res.status === 503) continue;
    return {
      status: res.status,
      orderId: body.orderId,
      code: body.type?.replace('urn:seckill:problem:', ''),
    };
  }
}

const keysOf = (productId: string, epoch: number) => a.rt.keys.room(productId, epoch);
const opened = (productId: string, epoch: number) =>
  waitFor(
    'the opening',
    async () => (await a.rt.redis.hget(keysOf(productId, epoch).room, ROOM_FIELD.opened)) === '1',
    10_000,
    50,
  );
/** Place reads (lua/roomPlace-3.lua) a connection sent. */
const placeReads = (count: CommandCount) =>
  [...count.bySha].reduce(
    (n, [sha, calls]) => n + (scriptNameOf(sha) === 'roomPlace' ? calls : 0),
    0,
  );

async function tickets(productId: string, epoch: number): Promise<Record<string, number>> {
  const h = await a.rt.redis.hgetall(keysOf(productId, epoch).places);
  return Object.fromEntries(Object.entries(h).map(([u, t]) => [u, Number(t)]));
}
const served = async (productId: string, epoch: number) =>
  Number((await a.rt.redis.hget(keysOf(productId, epoch).room, ROOM_FIELD.served)) ?? 0);

/**
 * The admit script's shuffle, written again: Fisher-Yates from the front over Park-Miller from
 * `seed` (step i draws j in i..k and fixes ticket i).
 */
function shuffled(arrivals: string[], seed: number): string[] {
  const out = [...arrivals];
  const k = out.length;
  let s = seed;
  for (let i = 1; i < k; i++) {
    s = (s * 48_271) % 2_147_483_647;
    const j = i + (s % (k - i + 1));
    [out[i - 1], out[j - 1]] = [out[j - 1]!, out[i - 1]!];
  }
  return out;
}

/** The lobby in arrival order (a hash: arrival index -> shopper). */
async function lobbyOf(productId: string, epoch: number): Promise<string[]> {
  const h = await a.rt.redis.hgetall(keysOf(productId, epoch).lobby);
  return Object.entries(h)
    .sort(([x], [y]) => Number(x) - Number(y))
    .map(([, u]) => u);
}

describe('joining', () => {
  it('gives one place per shopper, however many connections join at once on both processes', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 5,
      startsAt: new Date(Date.now() + 60_000).toISOString(),
      waitingRoom: room(),
    });
    const shoppers = users(20);
    const answers = await Promise.all(
      shoppers.flatMap((u) =>
        Array.from({ length: 8 }, (_, i) => join(i % 2 ? a : b, productId, u)),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((r) => r.body.state))).toEqual(new Set(['waiting']));
    // before the opening nobody has a rank yet: the lobby is one set
    expect(answers.every((r) => r.body.position === null && r.body.pollAfterSeconds! >= 1)).toBe(
      true,
    );
    const k = keysOf(productId, epoch);
    expect(await a.rt.redis.hlen(k.places)).toBe(20);
    expect(await a.rt.redis.hlen(k.lobby)).toBe(20);
    expect(new Set(await lobbyOf(productId, epoch))).toEqual(new Set(shoppers));
  });

  it('limits joins per shopper with the rate limits: 10 of 12 at once, the same place', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 5,
      startsAt: new Date(Date.now() + 60_000).toISOString(),
      waitingRoom: room(),
    });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => join(i % 2 ? a : b, productId, 'eager')),
    );
    // one place in Redis, not one per answered join (before the opening every position is null)
    const k = keysOf(productId, epoch);
    expect(await a.rt.redis.hgetall(k.places)).toEqual({ eager: '0' });
    expect(await lobbyOf(productId, epoch)).toEqual(['eager']);
    expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(2);
    expect(answers.every((r) => r.status !== 429 || Number(r.retryAfter) >= 1)).toBe(true);
    const places = new Set(answers.filter((r) => r.status === 200).map((r) => r.body.position));
    expect(places.size).toBe(1);
  });

  it("limits joins with the product's defaults (issue 46): 15 joins of one shopper at once, the burst of 5 answered, the rest 429", async () => {
    const defaults = Object.fromEntries(
      (['RATE_LIMIT_USER', 'RATE_LIMIT_IP', 'RATE_LIMIT_POLL_IP'] as const).map((n) => [
        n,
        schemaDefault(n)!,
      ]),
    );
    const shop = await startApp(ns.config(defaults));
    onTestFinished(() => shop.close());
    const productId = newProduct();
    await seed(productId, { total: 5, waitingRoom: room() });
    const [user] = users(1);
    const since = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 15 }, () => join(shop, productId, user!)),
    );
    const span = Date.now() - since;
    const passed = answers.filter((r) => r.status === 200).length;
    // GCRA at 5/s, bursts of 5: the burst at once, then one more per 200 ms of the span at most
    expect(passed).toBeGreaterThanOrEqual(5);
    expect(passed).toBeLessThanOrEqual(5 + Math.ceil(span / 200));
    expect(answers.filter((r) => r.status === 429)).toHaveLength(15 - passed);
    expect(passed).toBeLessThan(15);
  });

  it('bounds the line (ROOM_MAX_PLACES): a new shopper past it gets 409 room-full, nothing written (issue 46)', async () => {
    const capped = await startApp(ns.config({ ROOM_MAX_PLACES: '3' }));
    onTestFinished(() => capped.close());
    const productId = newProduct();
    const epoch = await seed(productId, { total: 5, waitingRoom: room() });
    const line = users(5);
    const answers = await Promise.all(line.map((u) => join(capped, productId, u)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 409)).toHaveLength(2);
    const refused = answers.find((r) => r.status === 409)!;
    expect((refused.body as { type?: string }).type).toBe('urn:seckill:problem:room-full');
    expect(Object.keys(await tickets(productId, epoch))).toHaveLength(3);
    // one who holds a place still gets it
    const placed = line.find((_, i) => statuses[i] === 200)!;
    expect((await join(capped, productId, placed)).status).toBe(200);
    const metrics = await (await fetch(`${capped.url}/metrics`)).text();
    expect(metrics).toContain(`seckill_room_full_refusals_total{product="${productId}"} 2`);
  });

  it('answers 404 to a poll of a shopper who did not join, and for a product without a room', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, waitingRoom: room() });
    const r = await poll(a, productId, 'nobody');
    expect([r.status, r.body.type]).toEqual([404, 'urn:seckill:problem:not-in-queue']);
    const plain = newProduct();
    await seed(plain, { total: 5 });
    expect((await join(a, plain, 'u1')).status).toBe(404);
  });

  // every bound of the three settings, each alone: a relaxed bound seeds a room it should refuse
  const good = { admitPerSecond: 5, maxActive: 10, admittedForSeconds: 60 };
  const bad: Array<[string, unknown]> = [
    ['admitPerSecond 0', { ...good, admitPerSecond: 0 }],
    ['admitPerSecond 1.5', { ...good, admitPerSecond: 1.5 }],
    ['admitPerSecond 100001', { ...good, admitPerSecond: 100_001 }],
    ['maxActive 0', { ...good, maxActive: 0 }],
    ['maxActive 1000001', { ...good, maxActive: 1_000_001 }],
    ['admittedForSeconds 4', { ...good, admittedForSeconds: 4 }],
    ['admittedForSeconds 3601', { ...good, admittedForSeconds: 3_601 }],
    ['admitPerSecond as a string', { ...good, admitPerSecond: '5' }],
    ['maxActive missing', { admitPerSecond: 5, admittedForSeconds: 60 }],
    ['an unknown field', { ...good, shuffle: false }],
    ['not an object', 5],
  ];
  it.each(bad)(
    'refuses bad room settings with 400, seeding nothing: %s',
    async (_, waitingRoom) => {
      const productId = newProduct();
      const res = await fetch(`${a.url}/admin/products/${productId}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ strategy: 'global', total: 5, waitingRoom }),
      });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = (await res.json()) as { type: string };
      expect(problem.type).toBe('urn:seckill:problem:invalid-request');
      expect(await a.rt.redis.exists(a.rt.keys.product(productId).meta)).toBe(0);
      expect(await a.rt.redis.sismember(a.rt.keys.rooms(), productId)).toBe(0);
    },
  );

  it('seeds the same settings within bounds (the 400s above are the bounds, not the shape)', async () => {
    const productId = newProduct();
    await seed(productId, {
      total: 5,
      waitingRoom: { admitPerSecond: 100_000, maxActive: 1_000_000, admittedForSeconds: 5 },
    });
    expect(await a.rt.redis.sismember(a.rt.keys.rooms(), productId)).toBe(1);
  });
});

describe('fairness', () => {
  it('shuffles the lobby once at the opening, deterministically under the seed', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 50,
      startsAt: new Date(Date.now() + 3_000).toISOString(),
      waitingRoom: room({ admitPerSecond: 1, maxActive: 1 }),
    });
    const joined = await Promise.all(users(12).map((u, i) => join(i % 2 ? a : b, productId, u)));
    expect(joined.map((r) => r.status)).toEqual(joined.map(() => 200));
    // the arrival order, as the lobby holds it, read before the opening
    const k = keysOf(productId, epoch);
    const arrivals = await lobbyOf(productId, epoch);
    expect(await a.rt.redis.hget(k.room, ROOM_FIELD.opened)).toBeNull();
    expect(arrivals).toHaveLength(12);
    await opened(productId, epoch);
    const t = await tickets(productId, epoch);
    const line = shuffled(arrivals, SEED);
    expect(arrivals.map((u) => t[u])).toEqual(arrivals.map((u) => line.indexOf(u) + 1));
    expect(line).not.toEqual(arrivals);
    // those who join after the opening line up behind the shuffled lobby, in arrival order
    const late = users(3);
    for (const [i, u] of late.entries()) {
      const r = await join(i % 2 ? a : b, productId, u);
      expect([r.status, r.body.state]).toEqual([200, 'waiting']);
    }
    const after = await tickets(productId, epoch);
    expect(late.map((u) => after[u])).toEqual([13, 14, 15]);
    // and the lobby's tickets did not move
    expect(arrivals.map((u) => after[u])).toEqual(arrivals.map((u) => t[u]));
    // admitted in ticket order: the first admitted is the shuffle's first
    const first = await waitFor(
      'the first admission',
      async () => {
        const ids = Object.keys(await a.rt.redis.hgetall(k.admitted));
        return ids.length > 0 && ids;
      },
      5_000,
      50,
    );
    expect(first[0]).toBe(line[0]);
  });

  it('shuffles a long lobby in bounded steps, admitting only from the shuffled prefix', async () => {
    const productId = newProduct();
    const store = new RoomStore(a.rt.redis, a.rt.keys);
    const sale = { epoch: 1, endsAt: 0 };
    const arrivals = users(12);
    for (const u of arrivals)
      expect(((await store.join(productId, sale, u, 100)) as { ticket: number }).ticket).toBe(0);
    const tick = () =>
      store.admit(
        productId,
        {
          epoch: 1,
          fence: 1,
          startsAt: 0,
          endsAt: 0,
          seed: SEED,
          settings: room({ admitPerSecond: 100 }),
          soldOut: false,
          unitsLeft: -1,
          limitPerUser: 1,
          doneAtRead: 0,
          shuffleSteps: 5,
        },
        false,
      );
    const line = shuffled(arrivals, SEED);
    const k = keysOf(productId, 1);
    const first = await tick();
    expect(first).toMatchObject({ opened: true, next: 12, shuffleLeft: 7, admitted: 5, served: 5 });
    let t = await tickets(productId, 1);
    // tickets 1..5 are final, the rest still unplaced; only those five are admitted
    expect(line.map((u) => t[u])).toEqual([1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0]);
    expect(Object.keys(await a.rt.redis.hgetall(k.admitted)).sort()).toEqual(
      line.slice(0, 5).sort(),
    );
    // a join after the opening lines up behind the whole lobby, mid-shuffle too
    expect(((await store.join(productId, sale, 'late', 100)) as { ticket: number }).ticket).toBe(
      13,
    );
    expect(await tick()).toMatchObject({ shuffleLeft: 2, admitted: 5, served: 10 });
    expect(await tick()).toMatchObject({ shuffleLeft: 0, admitted: 3, served: 13 });
    t = await tickets(productId, 1);
    // the same line as one pass would give: the steps carry the generator's state
    expect(line.map((u) => t[u])).toEqual(line.map((_, i) => i + 1));
    expect(t.late).toBe(13);
    expect(await a.rt.redis.exists(k.lobby)).toBe(0);
  });

  it('admits in arrival order after the opening (FIFO), paced, and each poll says the place', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 50, waitingRoom: room({ admitPerSecond: 4 }) });
    await opened(productId, epoch);
    const arrivals = users(10);
    for (const [i, u] of arrivals.entries()) {
      const r = await join(i % 2 ? a : b, productId, u);
      expect(r.status).toBe(200);
    }
    const t = await tickets(productId, epoch);
    expect(arrivals.map((u) => t[u])).toEqual(arrivals.map((_, i) => i + 1));
    const at = await waitFor(
      'every admission',
      async () => {
        const h = await a.rt.redis.hgetall(keysOf(productId, epoch).admitted);
        return Object.keys(h).length === 10 && h;
      },
      10_000,
      50,
    );
    const times = arrivals.map((u) => Number(at[u]));
    expect(times).toEqual([...times].sort((x, y) => x - y));
    // 4 a second, with one second's burst: ten admissions need more than one second
    expect(times[9]! - times[0]!).toBeGreaterThanOrEqual(1_000);
    const admitted = await poll(b, productId, arrivals[9]!);
    expect(admitted.body).toMatchObject({ state: 'admitted', position: 0, aheadOfYou: 0 });
    expect(admitted.body.saleToken).toEqual(expect.any(String));
  });
});

describe('admission is a sale token', () => {
  it('refuses a purchase without admission (403, nothing sold) and sells with it', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 3, waitingRoom: room() });
    const skip = await buy(productId, 'skipper');
    expect([skip.status, skip.code]).toEqual([403, 'invalid-sale-token']);
    const token = await fetch(`${a.url}/products/${productId}/sale-token`, {
      method: 'POST',
      headers: { 'x-user-id': 'skipper' },
    });
    expect(token.status).toBe(403);
    const view = (await (await fetch(`${a.url}/products/${productId}`)).json()) as {
      remaining: number;
    };
    expect(view.remaining).toBe(3);

    await opened(productId, epoch);
    expect((await join(a, productId, 'shopper1')).status).toBe(200);
    const place = await waitFor(
      'admission',
      async () => {
        const r = await poll(a, productId, 'shopper1');
        return r.body.state === 'admitted' && r.body;
      },
      10_000,
      50,
    );
    // another shopper's token is not this one's
    expect((await buy(productId, 'skipper', place.saleToken)).status).toBe(403);
    expect((await buy(productId, 'shopper1', place.saleToken)).status).toBe(202);
    // the purchase freed the seat
    const active = keysOf(productId, epoch).active;
    await waitFor('the seat freed', async () => (await a.rt.redis.zcard(active)) === 0, 5_000, 50);
    // A release that never happened (a 503 that sold, a release timed out, which would leave a
    // line stuck a minute): the shopper's next try, limit-reached, frees the seat too
    await a.rt.redis.zadd(active, Date.now() + 600_000, 'shopper1');
    const again = await buy(productId, 'shopper1', place.saleToken);
    expect([again.status, again.code]).toEqual([409, 'limit-reached']);
    await waitFor(
      'the seat freed again',
      async () => (await a.rt.redis.zcard(active)) === 0,
      5_000,
      50,
    );
  });
});

describe('stock-aware', () => {
  it('tells every waiting shopper sold-out, stops admitting, and resumes for the next in line on a return', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 2,
      payWithinSeconds: 600,
      waitingRoom: room({ admitPerSecond: 20, maxActive: 2 }),
    });
    await opened(productId, epoch);
    const line = users(6);
    for (const u of line) expect((await join(a, productId, u)).status).toBe(200);
    const firstTwo = await Promise.all(line.slice(0, 2).map((u) => tokenOf(a, productId, u)));
    const orders = await Promise.all(
      line.slice(0, 2).map((u, i) => buy(productId, u, firstTwo[i])),
    );
    expect(orders.map((o) => o.status)).toEqual([202, 202]);
    // every one still waiting hears sold-out on its next poll, on either process
    await waitFor(
      'sold out heard',
      async () => {
        const answers = await Promise.all(
          line.slice(2).flatMap((u) => [poll(a, productId, u), poll(b, productId, u)]),
        );
        return answers.every((r) => r.body.state === 'sold-out');
      },
      10_000,
      100,
    );
    const servedAtSoldOut = await served(productId, epoch);
    expect(servedAtSoldOut).toBe(2);
    // the scenario: time for an admission that must not come
    await new Promise((r) => setTimeout(r, 500));
    expect(await served(productId, epoch)).toBe(2);

    // the first buyer cancels: the unit comes back, the next in line (and only they) is admitted
    const overdue = deadlineOf('the cancel answered 200', 50_000);
    for (;;) {
      overdue();
      const res = await fetch(`${a.url}/orders/${orders[0]!.orderId}/cancel`, {
        method: 'POST',
        headers: { 'x-user-id': line[0]! },
      });
      if (res.status === 200) break;
      expect(res.status, await res.text()).toBe(503);
      await new Promise((r) => setTimeout(r, 100));
    }
    const next = await waitFor(
      'the next admitted',
      async () => {
        const r = await poll(b, productId, line[2]!);
        return r.body.state === 'admitted' && r.body.saleToken;
      },
      15_000,
      100,
    );
    // one unit back, two free seats: one admission, the next in line, and no more
    // the scenario: time for a second admission that must not come
    await new Promise((r) => setTimeout(r, 500));
    expect(await served(productId, epoch)).toBe(3);
    expect((await buy(productId, line[2]!, next)).status).toBe(202);
    // sold out again: the rest hear it
    await waitFor(
      'sold out again',
      async () => (await poll(b, productId, line[3]!)).body.state === 'sold-out',
      10_000,
      100,
    );
    expect(await served(productId, epoch)).toBe(3);
  });
});

describe('a return whose notice was lost (issue 46)', () => {
  it('still admits the next in line: the admitter finds the unit back and announces it', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 1,
      payWithinSeconds: 600,
      waitingRoom: room({ admitPerSecond: 20, maxActive: 1 }),
    });
    await opened(productId, epoch);
    const line = users(3);
    for (const u of line) expect((await join(a, productId, u)).status).toBe(200);
    const order = await buy(productId, line[0]!, await tokenOf(a, productId, line[0]!));
    expect(order.status).toBe(202);
    // both processes hold the view a reload gives a sold-out sale with a payment window: not
    // sold out for purchases (units may come back), marked sold out for the line
    const marked = (app: RunningApp) => {
      const v = app.rt.inventory.catalogue.known(productId);
      return v !== undefined && v.soldOutMarked && !v.soldOut;
    };
    await waitFor(
      'sold out marked, the view reloaded',
      async () => {
        await Promise.all([a, b].map((app) => app.rt.inventory.catalogue.get(productId)));
        return marked(a) && marked(b);
      },
      10_000,
      100,
    );
    // the buyer cancels; the restock notice is lost (dropped on its way out)
    const publish = a.rt.redis.spublish.bind(a.rt.redis);
    const dropped: string[] = [];
    a.rt.redis.spublish = ((channel: string, message: string) => {
      // the first restock notice (the cancel's) is lost; the admitter's own one gets through
      if (String(message).startsWith('restock') && dropped.length === 0) {
        dropped.push(String(message));
        return Promise.resolve(0);
      }
      return publish(channel, message);
    }) as typeof a.rt.redis.spublish;
    try {
      const overdue = deadlineOf('the cancel answered 200', 50_000);
      for (;;) {
        overdue();
        const res = await fetch(`${a.url}/orders/${order.orderId}/cancel`, {
          method: 'POST',
          headers: { 'x-user-id': line[0]! },
        });
        if (res.status === 200) break;
        expect(res.status, await res.text()).toBe(503);
      }
    } finally {
      a.rt.redis.spublish = publish;
    }
    expect(dropped).toHaveLength(1);
    const next = await waitFor(
      'the next admitted',
      async () => {
        const r = await poll(b, productId, line[1]!);
        return r.body.state === 'admitted' && r.body.saleToken;
      },
      15_000,
      100,
    );
    expect((await buy(productId, line[1]!, next)).status).toBe(202);
  });
});

describe('stock bound with limitPerUser above 1', () => {
  it('admits ceil(units left / limitPerUser) shoppers: each can buy their limit, the last maybe short', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 5,
      limitPerUser: 2,
      waitingRoom: room({ admitPerSecond: 20, maxActive: 10 }),
    });
    await opened(productId, epoch);
    const line = users(6);
    for (const u of line) expect((await join(a, productId, u)).status).toBe(200);
    await waitFor('admissions', async () => (await served(productId, epoch)) >= 3, 10_000, 50);
    // 5 units at 2 a shopper: 3 seats (2 + 2 + 1), not 5
    // the scenario: time for admissions that must not come
    await new Promise((r) => setTimeout(r, 500));
    expect(await served(productId, epoch)).toBe(3);
    const tokens = await Promise.all(line.slice(0, 3).map((u) => tokenOf(a, productId, u)));
    expect((await buy(productId, line[0]!, tokens[0], 2)).status).toBe(202);
    expect((await buy(productId, line[1]!, tokens[1], 2)).status).toBe(202);
    // 1 unit left, 1 seat still unused: nobody more is admitted
    // the scenario: time for an admission that must not come
    await new Promise((r) => setTimeout(r, 500));
    expect(await served(productId, epoch)).toBe(3);
    // the third gets the last unit (2 would be more than there is)
    const short = await buy(productId, line[2]!, tokens[2], 2);
    expect(short.status).toBe(409);
    expect((await buy(productId, line[2]!, tokens[2], 1)).status).toBe(202);
    await waitFor(
      'sold out heard',
      async () => (await poll(b, productId, line[3]!)).body.state === 'sold-out',
      10_000,
      100,
    );
    expect(await served(productId, epoch)).toBe(3);
    const view = (await (await fetch(`${a.url}/products/${productId}`)).json()) as {
      remaining: number;
    };
    expect(view.remaining).toBe(0);
  });
});

describe('polls', () => {
  it('are answered from memory, ahead of Express: no Redis command, admitted ones included', async () => {
    // b admits no more (a does): its connection carries only what the polls would send
    await b.services.roomAdmitter.stop();
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 100,
      waitingRoom: room({ admitPerSecond: 1, maxActive: 2 }),
    });
    await opened(productId, epoch);
    const line = users(5);
    for (const u of line) expect((await join(b, productId, u)).status).toBe(200);
    // b hears the first admissions
    await waitFor(
      'b heard an admission',
      async () => (await poll(b, productId, line[0]!)).body.state === 'admitted',
      10_000,
      50,
    );
    const heard = await served(productId, epoch);
    // the joins' fairness notes are batched off the request path: written now, before the count
    await b.services.fairnessNotes?.flush();
    const count = countCommands(b.rt.redis);
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => line.map((u) => poll(b, productId, u))).flat(),
      );
      expect(count.total()).toBe(0);
      expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
      const first = answers.filter((r) => r.body.state === 'admitted');
      expect(first.length).toBeGreaterThanOrEqual(20 * heard);
      expect(first.every((r) => typeof r.body.saleToken === 'string')).toBe(true);
      const waiting = answers.find((r) => r.body.state === 'waiting')!;
      expect(waiting.retryAfter).toBe(String(waiting.body.pollAfterSeconds));
    } finally {
      count.stop();
    }
  });
});

describe('polls of a shopper not in line (issue 46)', () => {
  it("cost one Redis read, not one a poll, and a join here forgets the 'not in line'", async () => {
    // a place is read in one MULTI (store.place): none of the polls after the first sends one
    const productId = newProduct();
    const epoch = await seed(productId, { total: 10, waitingRoom: room() });
    await opened(productId, epoch);
    const stranger = `x${randomBytes(3).toString('hex')}`;
    const since = Date.now();
    const first = await poll(b, productId, stranger);
    expect([first.status, first.body.type]).toEqual([404, 'urn:seckill:problem:not-in-queue']);
    const count = countCommands(b.rt.redis);
    try {
      const again = await Promise.all(
        Array.from({ length: 50 }, () => poll(b, productId, stranger)),
      );
      expect(again.map((r) => r.status)).toEqual(again.map(() => 404));
      // "not in line" is trusted NOT_HERE_MS: one read per NOT_HERE_MS of this span at most (none
      // on a quiet machine), where each of the 50 cost one before
      const span = Date.now() - since;
      expect(placeReads(count)).toBeLessThanOrEqual(Math.floor(span / NOT_HERE_MS));
      // joining here forgets it: the next poll answers the place
      expect((await join(b, productId, stranger)).status).toBe(200);
      const placed = await poll(b, productId, stranger);
      expect(placed.status).toBe(200);
      expect(['waiting', 'admitted']).toContain(placed.body.state);
    } finally {
      count.stop();
    }
  });

  it('answers 404 not-in-queue after the room ended to one who never joined, 200 ended to one who did', async () => {
    const productId = newProduct();
    const endsAt = Date.now() + 1_500;
    await seed(productId, {
      total: 10,
      waitingRoom: room(),
      endsAt: new Date(endsAt).toISOString(),
    });
    const member = `m${randomBytes(3).toString('hex')}`;
    expect((await join(a, productId, member)).status).toBe(200);
    // the end passes (a condition on the clock this test compares with: endsAt is the server's)
    await waitFor('the end', async () => Date.now() > endsAt + 50, 10_000, 50);
    for (const app of [a, b]) {
      const stranger = await poll(app, productId, `s${randomBytes(3).toString('hex')}`);
      expect([stranger.status, stranger.body.type]).toEqual([
        404,
        'urn:seckill:problem:not-in-queue',
      ]);
      const inLine = await poll(app, productId, member);
      expect([inLine.status, inLine.body.state]).toEqual([200, 'ended']);
    }
  });

  it('are limited per client address in memory (RATE_LIMIT_POLL_IP): 429 with Retry-After, no Redis command', async () => {
    const limited = await startApp(ns.config({ RATE_LIMIT_POLL_IP: '5/m', ROOM_TICK_MS: '1000' }));
    onTestFinished(() => limited.close());
    const productId = newProduct();
    await seed(productId, { total: 10, waitingRoom: room() });
    const who = `x${randomBytes(3).toString('hex')}`;
    const first = await poll(limited, productId, who); // loads the product, reads the place
    expect(first.status).toBe(404);
    await limited.services.roomAdmitter.stop();
    const count = countCommands(limited.rt.redis);
    try {
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => poll(limited, productId, `${who}${i}`)),
      );
      const statuses = answers.map((r) => r.status);
      // the burst (5) less the first poll passes; each of those reads a place it does not know
      expect(statuses.filter((s) => s === 404)).toHaveLength(4);
      expect(statuses.filter((s) => s === 429)).toHaveLength(8);
      const refused = answers.find((r) => r.status === 429)!;
      expect(refused.body.type).toBe('urn:seckill:problem:rate-limited');
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
      // only the four that passed read Redis (one place read each)
      expect(placeReads(count)).toBe(4);
    } finally {
      count.stop();
    }
  });
});

describe('the admitter is a background loop (issue 46)', () => {
  it("its commands are not counted as a request's cost on the connection it shares", async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 100,
      waitingRoom: room({ admitPerSecond: 5, maxActive: 100 }),
    });
    await opened(productId, epoch);
    for (const u of users(10)) expect((await join(b, productId, u)).status).toBe(200);
    const count = countCommands(a.rt.redis);
    try {
      // a admits (it holds the rooms' leases here, or competes for them: SMEMBERS, lock tries)
      // read through b's connection: a's is the one counted
      const servedB = async () =>
        Number((await b.rt.redis.hget(keysOf(productId, epoch).room, ROOM_FIELD.served)) ?? 0);
      const at = await servedB();
      await waitFor('admissions', async () => (await servedB()) >= at + 3, 10_000, 50);
      expect(Object.fromEntries(count.byName)).toEqual({});
    } finally {
      count.stop();
    }
  });
});

describe('the admitter', () => {
  it("counts none of an unanswering shard's units, and is not sold out for them", () => {
    // a chaos run: a segment unread counted as "no bound", the admitter admitted a batch past
    // the stock while a process told the shoppers before them sold out
    expect(admissionUnits([{ stock: 3 }, { stock: 9, unreachable: true }])).toEqual({
      units: 3,
      known: false,
    });
    expect(admissionUnits([{ stock: 0 }, { stock: 0, unreachable: true }])).toEqual({
      units: 0,
      known: false,
    });
    expect(admissionUnits([{ stock: 0 }, { stock: 2 }])).toEqual({ units: 2, known: true });
  });

  it('refuses a tick under an older fencing token than the newest it saw (a paused holder)', async () => {
    const productId = newProduct();
    const store = new RoomStore(a.rt.redis, a.rt.keys);
    const tick = (fence: number) =>
      store.admit(
        productId,
        {
          epoch: 1,
          fence,
          startsAt: 0,
          endsAt: 0,
          seed: 7,
          settings: room(),
          soldOut: false,
          unitsLeft: -1,
          limitPerUser: 1,
          doneAtRead: 0,
        },
        false,
      );
    expect((await tick(5)).code).toBe('ticked');
    expect(await tick(4)).toEqual({ code: 'fenced', newer: 5 });
    expect((await tick(6)).code).toBe('ticked');
  });

  it('counts a seat freed after its units read as still taken: a stale read admits nobody extra (issue 46)', async () => {
    // not a seeded product: the store alone, as the admitter drives it, with the read it makes
    const productId = newProduct();
    const store = new RoomStore(a.rt.redis, a.rt.keys);
    const sale = { epoch: 1, endsAt: 0 };
    const line = users(4);
    const tick = (unitsLeft: number, doneAtRead: number) =>
      store.admit(
        productId,
        {
          epoch: 1,
          fence: 1,
          startsAt: 0,
          endsAt: 0,
          seed: 7,
          settings: room({ admitPerSecond: 100, maxActive: 10 }),
          soldOut: false,
          unitsLeft,
          limitPerUser: 2,
          doneAtRead,
        },
        false,
      );
    await tick(3, 0); // the opening
    for (const u of line) await store.join(productId, sale, u, 100);
    // 3 units at 2 a shopper: 2 seats
    expect(await tick(3, 0)).toMatchObject({ code: 'ticked', served: 2 });
    // the admitter reads the freed-seat count, then the units (3: the first buyer's 2 units
    // not yet gone); the first buyer's purchase lands and frees their seat; then the tick
    const doneAtRead = await store.doneCount(productId, 1);
    await store.done(productId, 1, line[0]!);
    // 1 unit is left, the second shopper's seat covers it: nobody more (3 said one more)
    expect(await tick(3, doneAtRead)).toMatchObject({ code: 'ticked', served: 2 });
    // the next tick reads the units after the purchase: still nobody (1 unit, 1 seat)
    expect(await tick(1, await store.doneCount(productId, 1))).toMatchObject({ served: 2 });
  });

  it('is taken over by another process when its process dies, and nobody changes place', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 100, waitingRoom: room({ admitPerSecond: 2 }) });
    await opened(productId, epoch);
    const line = users(30);
    for (const u of line) await join(a, productId, u);
    // b admits no more (stopped above, or here when this test runs alone): a third process
    // contends with a
    await b.services.roomAdmitter.stop();
    const c = await startApp(config);
    onTestFinished(() => c.close());
    const holder = await waitFor(
      'a holder',
      async () => [a, c].find((p) => p.services.roomAdmitter.holding.includes(productId)),
      5_000,
      50,
    );
    const survivor = holder === a ? c : a;
    const before = await tickets(productId, epoch);
    // killed: no release; its lease runs out (ROOM_LEASE_MS) and the other process takes over
    await holder.services.roomAdmitter.stop({ release: false });
    const servedAtKill = await served(productId, epoch);
    await waitFor(
      'the takeover',
      async () => survivor.services.roomAdmitter.holding.includes(productId),
      5_000,
      50,
    );
    await waitFor(
      'admission resumed',
      async () => (await served(productId, epoch)) > servedAtKill + 1,
      5_000,
      50,
    );
    expect(await tickets(productId, epoch)).toEqual(before);
    // the admitted ones are the first tickets, no gap and no skip
    // the served counter and the admitted shoppers read at one instant (one slot, one MULTI)
    const k = keysOf(productId, epoch);
    const [[, servedNow], [, admittedNow]] = (await a.rt.redis
      .multi()
      .hget(k.room, ROOM_FIELD.served)
      .hgetall(k.admitted)
      .exec()) as [[null, string], [null, Record<string, string>]];
    const admitted = Object.keys(admittedNow);
    const n = Number(servedNow);
    expect(admitted.map((u) => before[u]).sort((x, y) => x! - y!)).toEqual(
      Array.from({ length: n }, (_, i) => i + 1),
    );
  });
});

describe('the estimate before the opening', () => {
  it('counts the shoppers who join the lobby after a shopper: their worst case grows with it, on either process', async () => {
    const productId = newProduct();
    // 1 unit: 1 seat held 60 s at worst, 1 / 60 admissions a second (and the units serve one
    // shopper: the floor on an unheard lobby, estimate.ts, is below any lobby here)
    await seed(productId, {
      total: 1,
      limitPerUser: 1,
      startsAt: new Date(Date.now() + 60_000).toISOString(),
      waitingRoom: room({ admitPerSecond: 20, maxActive: 100, admittedForSeconds: 60 }),
    });
    const [first, ...later] = users(31);
    const atJoin = (await join(a, productId, first!)).body.estimatedWaitSeconds!;
    for (const u of later) expect((await join(a, productId, u!)).status).toBe(200);
    // 30 joined behind: 90 % of 31 at 1/60 a second is 1620 s more than 90 % of 1 (the shuffle
    // puts the first anywhere among them), whatever the process asked
    const slowest = 1 / 60;
    for (const app of [a, b]) {
      const now = (await poll(app, productId, first!)).body.estimatedWaitSeconds!;
      expect(now.p90 - atJoin.p90, app === a ? 'a' : 'b').toBeGreaterThanOrEqual(
        Math.floor((0.9 * 30) / slowest) - 2,
      );
    }
  });
});
