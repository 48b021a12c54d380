/**
 * The waiting rooms' admitter when a room has nothing to do (docs/waiting-room.md#what-it-costs-redis),
 * through two API processes on one Redis and on the Cluster: a room scheduled for later and an open
 * room with nobody in line cost no Redis command at all (counted on both processes' connections,
 * the admitter's background commands included, over a span of another room's ticks); a join wakes
 * an idle room, a freed seat one asleep on its seats, a return a sold-out one; a wake whose notice
 * is lost, or whose process died before sending it, still gets the shopper admitted; one admitter
 * at a time (a holder whose lease was taken is fenced); a sleeping room whose last holder died is
 * woken by the next join on another process.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { LockClient } from '../../src/lock/index.js';
import { RoomStore } from '../../src/inventory/index.js';
import { ROOM_FIELD } from '../../src/inventory/records/hash-fields.js';
import { countCommands } from '../../src/redis/command-count.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
let a: RunningApp;
let b: RunningApp;
/** a room kept awake the whole file (1 admission a second, a long line): its ticks are the span */
const control = `c${randomBytes(4).toString('hex')}`;
let controlEpoch: number;

const env = {
  SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
  ROOM_LEASE_MS: '1000',
  ROOM_TICK_MS: '50',
  // the slow look at a room asleep with people in line stays out of these tests' way: what wakes
  // a room here is what each test names
  ROOM_RECHECK_MS: '60000',
  LOG_LEVEL: process.env.DEBUG_LOG ?? 'silent',
};

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const users = (n: number) =>
  Array.from({ length: n }, (_, i) => `u${i}x${randomBytes(3).toString('hex')}`);
const room = (settings: Partial<Record<string, number>> = {}) => ({
  admitPerSecond: 20,
  maxActive: 100,
  admittedForSeconds: 60,
  ...settings,
});

const seed = (productId: string, body: Record<string, unknown>) =>
  seedSale(a.url, productId, { strategy: 'segmented', segments: 2, ...body }).then((s) => s.epoch);

async function join(app: RunningApp, productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    method: 'POST',
    headers: { 'x-user-id': user },
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function poll(app: RunningApp, productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    headers: { 'x-user-id': user },
  });
  return (await res.json()) as { state: string; saleToken?: string };
}

/** The shopper's sale token, once a poll of `app` answers them admitted. */
const tokenOf = (app: RunningApp, productId: string, user: string, timeoutMs = 5_000) =>
  waitFor(
    `${user}'s admission`,
    async () => {
      const r = await poll(app, productId, user);
      return r.state === 'admitted' && r.saleToken;
    },
    timeoutMs,
    50,
  );

async function buy(productId: string, user: string, saleToken: string) {
  const overdue = deadlineOf(`an answer but 503 for ${user}`, 50_000);
  for (;;) {
    overdue();
    const res = await fetch(`${b.url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': user, 'sale-token': saleToken },
      body: JSON.stringify({ productId, quantity: 1 }),
    });
    const body = (await res.json()) as { orderId?: string };
    if (res.status !== 503) return { status: res.status, orderId: body.orderId };
  }
}

const keysOf = (productId: string, epoch: number) => a.rt.keys.room(productId, epoch);
const roomField = (productId: string, epoch: number, field: string) =>
  a.rt.redis.hget(keysOf(productId, epoch).room, field);
const served = async (productId: string, epoch: number) =>
  Number((await roomField(productId, epoch, ROOM_FIELD.served)) ?? 0);
/** The room's opening (joins before it are a lobby, shuffled: the line's order is the test's). */
const opened = (productId: string, epoch: number, app = a) =>
  waitFor(
    'the opening',
    async () =>
      (await app.rt.redis.hget(app.rt.keys.room(productId, epoch).room, ROOM_FIELD.opened)) === '1',
    10_000,
    50,
  );

/** When each process plans to act for the room next (Infinity: a notice only). */
const plans = (productId: string) =>
  [a, b].map((app) => app.services.roomAdmitter.plannedAt(productId));

/** Waits until both processes have nothing planned for the room until a notice. */
const bothAsleep = (productId: string, timeoutMs = 10_000) =>
  waitFor(
    () => `both admitters idle for ${productId} (planned: ${plans(productId).join(', ')})`,
    async () => plans(productId).every((at) => at === Infinity),
    timeoutMs,
    50,
  );

/** `n` ticks of the control room (its hash's lastAt moves at each): a span of admitter work. */
async function span(n: number): Promise<void> {
  let last = await roomField(control, controlEpoch, ROOM_FIELD.lastAt);
  for (let i = 0; i < n; i++) {
    const was = last;
    last = await waitFor(
      'a tick of the control room',
      async () => {
        const now = await roomField(control, controlEpoch, ROOM_FIELD.lastAt);
        return now !== was && now;
      },
      10_000,
      10,
    );
  }
}

/**
 * Commands naming `productId` that both processes send during `run`: the admitter's, and any a
 * request or a notice sends (not the worker's sweeps: a quiet product's, room or not).
 */
async function commandsDuring(productId: string, run: () => Promise<void>) {
  const counts = [a, b].map((app) =>
    countCommands(app.rt.redis, { background: 'room admitter', naming: productId }),
  );
  try {
    await run();
    return counts.map((c) => Object.fromEntries(c.byName));
  } finally {
    for (const c of counts) c.stop();
  }
}

beforeAll(async () => {
  const config = ns.config(env);
  a = await startApp(config, { worker: true });
  b = await startApp(config);
  controlEpoch = await seed(control, {
    total: 1_000,
    waitingRoom: room({ admitPerSecond: 1, maxActive: 1_000 }),
  });
  for (const u of users(300)) await join(a, control, u);
  await span(3);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

describe('an idle room costs no Redis command', () => {
  it('scheduled for later: nothing until its opening, on either process', async () => {
    const productId = newProduct();
    const startsAt = Date.now() + 3_600_000;
    await seed(productId, {
      total: 100,
      startsAt: new Date(startsAt).toISOString(),
      waitingRoom: room(),
    });
    // shoppers in the lobby change nothing: the opening shuffles them
    for (const u of users(3)) await join(b, productId, u);
    await waitFor(
      () => `both admitters planning the opening (planned: ${plans(productId).join(', ')})`,
      async () => plans(productId).every((at) => at === startsAt),
      10_000,
      50,
    );
    const sent = await commandsDuring(productId, () => span(20));
    expect(sent).toEqual([{}, {}]);
  });

  it('open with nobody in line: nothing once it sleeps; a join wakes it, and it sleeps again', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 100,
      waitingRoom: room({ admittedForSeconds: 5 }),
    });
    await opened(productId, epoch);
    await bothAsleep(productId);
    expect(await roomField(productId, epoch, ROOM_FIELD.asleep)).toBe('join');
    const sent = await commandsDuring(productId, () => span(20));
    expect(sent).toEqual([{}, {}]);

    const [shopper] = users(1);
    await join(b, productId, shopper!);
    const token = await tokenOf(a, productId, shopper!);
    expect(await served(productId, epoch)).toBe(1);
    // the admission used: a look at its planned end finds nothing, then nothing is planned
    expect((await buy(productId, shopper!, token as string)).status).toBe(202);
    await bothAsleep(productId, 20_000);
    expect(await commandsDuring(productId, () => span(20))).toEqual([{}, {}]);
  });

  it('asleep on a join with an admission out: looked at once at its end, then nothing', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 100,
      waitingRoom: room({ admittedForSeconds: 5 }),
    });
    await opened(productId, epoch);
    await bothAsleep(productId);
    const [shopper] = users(1);
    await join(b, productId, shopper!);
    await tokenOf(a, productId, shopper!);
    const active = keysOf(productId, epoch).active;
    expect(await a.rt.redis.zcard(active)).toBe(1);
    // asleep on a join, but its holder looks again when the admission ends (not before, and the
    // other process only a lease after that)
    await waitFor(
      () => `a look planned at the admission's end (planned: ${plans(productId).join(', ')})`,
      async () => plans(productId).some((at) => Number.isFinite(at)),
      10_000,
      50,
    );
    // unused, it ends: counted abandoned, its seat freed, and the room sleeps with nothing planned
    await bothAsleep(productId, 20_000);
    expect(await a.rt.redis.zcard(active)).toBe(0);
    expect(await poll(a, productId, shopper!)).toMatchObject({ state: 'expired' });
    expect(await roomField(productId, epoch, ROOM_FIELD.asleep)).toBe('join');
    expect(await commandsDuring(productId, () => span(20))).toEqual([{}, {}]);
  });
});

describe('what wakes a sleeping room', () => {
  it('asleep on a join with an admission out: looked at first at its lead, before its end', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 100, waitingRoom: room() });
    await opened(productId, epoch);
    await bothAsleep(productId);
    const [shopper] = users(1);
    await join(b, productId, shopper!);
    await tokenOf(a, productId, shopper!);
    // asleep again with nobody in line; its one admission running is looked at once, at its lead
    // (ROOM_EXPIRING_LEAD_S, 30 s before its end of 60 s: its shopper hears it ends soon)
    await waitFor(
      () =>
        `both admitters planning the admission's lead (planned: ${plans(productId).join(', ')})`,
      async () =>
        plans(productId).every(
          (at) => at !== undefined && at > Date.now() + 20_000 && at < Date.now() + 40_000,
        ),
      10_000,
      50,
    );
    expect(await commandsDuring(productId, () => span(20))).toEqual([{}, {}]);
  });

  it('a wake whose notice is lost: the joining process acts on its own wake', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 100, waitingRoom: room() });
    await bothAsleep(productId);
    // b's wake notices never reach anyone (a itself does not hear of the join)
    const publish = b.rt.redis.spublish.bind(b.rt.redis);
    const dropped: string[] = [];
    b.rt.redis.spublish = ((channel: string, message: string) => {
      if (String(message).startsWith('wake')) {
        dropped.push(String(message));
        return Promise.resolve(0);
      }
      return publish(channel, message);
    }) as typeof b.rt.redis.spublish;
    try {
      const [shopper] = users(1);
      await join(b, productId, shopper!);
      await tokenOf(b, productId, shopper!);
    } finally {
      b.rt.redis.spublish = publish;
    }
    expect(dropped).toEqual([`wake ${epoch} join`]);
  });

  it("a wake lost with its process: the waiting shopper's poll has the room looked at", async () => {
    const productId = newProduct();
    const epoch = await seed(productId, { total: 100, waitingRoom: room() });
    await bothAsleep(productId);
    await waitFor(
      'a heard the room asleep on a join',
      async () => a.rt.inventory.catalogue.known(productId)?.room?.heard.sleeping === 'join',
      5_000,
      50,
    );
    // a process joins the shopper and dies before its wake goes out: the place is in Redis, the
    // room asleep, nobody told (its store has no admitter and sends nothing here)
    const [shopper] = users(1);
    const dying = new RoomStore(a.rt.redis, a.rt.keys);
    dying.wake = () => {};
    const place = await dying.join(productId, { epoch, endsAt: 0 }, shopper!, 100);
    expect(place).toMatchObject({ ticket: 1, served: 0, joined: true });
    // the recheck is a minute away: only the poll can have it looked at
    await tokenOf(a, productId, shopper!);
    expect(await served(productId, epoch)).toBe(1);
  });

  it('a seat freed by a purchase wakes a room asleep on its seats', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 10,
      waitingRoom: room({ maxActive: 1, admittedForSeconds: 600 }),
    });
    await opened(productId, epoch);
    const line = users(2);
    for (const u of line) await join(a, productId, u);
    const token = await tokenOf(a, productId, line[0]!);
    // asleep on its seats: looked at again at the recheck (a minute), not before
    await waitFor(
      () => `both admitters idle for a minute (planned: ${plans(productId).join(', ')})`,
      async () =>
        (await roomField(productId, epoch, ROOM_FIELD.asleep)) === 'seat' &&
        plans(productId).every((at) => at !== undefined && at > Date.now() + 30_000),
      10_000,
      50,
    );
    expect(await served(productId, epoch)).toBe(1);
    expect((await buy(productId, line[0]!, token)).status).toBe(202);
    // the seat's end is 10 minutes away, the recheck a minute: only the freed seat wakes it
    await tokenOf(b, productId, line[1]!);
    expect(await served(productId, epoch)).toBe(2);
  });

  it('a return wakes a sold-out room asleep with people in line', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 1,
      payWithinSeconds: 600,
      waitingRoom: room({ maxActive: 5 }),
    });
    await opened(productId, epoch);
    const line = users(3);
    for (const u of line) await join(a, productId, u);
    const order = await buy(productId, line[0]!, await tokenOf(a, productId, line[0]!));
    expect(order.status).toBe(202);
    await waitFor(
      'the room asleep until a notice',
      async () =>
        (await roomField(productId, epoch, ROOM_FIELD.asleep)) === null &&
        plans(productId).every((at) => at !== undefined && at > Date.now() + 30_000),
      10_000,
      50,
    );
    expect(await served(productId, epoch)).toBe(1);
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
    await tokenOf(b, productId, line[1]!);
    expect(await served(productId, epoch)).toBe(2);
  });
});

describe('one admitter at a time', () => {
  it('a holder whose lease another process took is fenced: every ticket admitted once, in order', async () => {
    const productId = newProduct();
    const epoch = await seed(productId, {
      total: 1_000,
      waitingRoom: room({ admitPerSecond: 10, maxActive: 1_000 }),
    });
    await opened(productId, epoch);
    const line = users(40);
    for (const [i, u] of line.entries()) await join(i % 2 ? a : b, productId, u);
    const holderOf = () => [a, b].find((p) => p.services.roomAdmitter.holding.includes(productId));
    const holder = await waitFor('a holder', async () => holderOf(), 5_000, 20);
    const fence = Number(await roomField(productId, epoch, ROOM_FIELD.admitterFence));
    // an operator (or a holder that paused past its lease) frees the lease: another hold begins
    // while the first still believes it holds the room
    const admin = new LockClient({
      redis: a.rt.redis,
      pubsub: a.rt.inventory.pubsub,
      keys: a.rt.keys,
    });
    onTestFinished(() => admin.close());
    expect(await admin.lock(`room:${productId}`).forceUnlock()).toBe(true);
    await waitFor(
      'a newer fence at work',
      async () => Number(await roomField(productId, epoch, ROOM_FIELD.admitterFence)) > fence,
      10_000,
      20,
    );
    expect(holder).toBeDefined();
    await waitFor(
      'every one admitted',
      async () => (await served(productId, epoch)) === 40,
      20_000,
      50,
    );
    const k = keysOf(productId, epoch);
    const tickets = await a.rt.redis.hgetall(k.places);
    const admitted = await a.rt.redis.hgetall(k.admitted);
    expect(Object.keys(admitted)).toHaveLength(40);
    // admission times follow the tickets: nobody admitted before an earlier ticket
    const byTicket = Object.keys(tickets).sort((x, y) => Number(tickets[x]) - Number(tickets[y]));
    const times = byTicket.map((u) => Number(admitted[u]));
    expect(times).toEqual([...times].sort((x, y) => x - y));
  });

  it("a room asleep on its seats whose last holder died: the other process admits at the seat's end", async () => {
    // a prefix of its own: the two processes here are the only ones admitting its rooms
    const config = ns.config({ ...env, KEY_PREFIX: `${ns.id}x`, QUEUE_PREFIX: `{${ns.id}x}` });
    const x = [await startApp(config), await startApp(config)];
    const alive = new Set(x);
    onTestFinished(async () => {
      for (const app of alive) await app.services.roomAdmitter.stop({ release: false });
      await Promise.all(x.map((app) => app.close()));
    });
    const productId = newProduct();
    const res = await fetch(`${x[0]!.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({
        strategy: 'segmented',
        segments: 2,
        total: 10,
        waitingRoom: room({ maxActive: 1, admittedForSeconds: 5 }),
      }),
    });
    expect(res.status).toBe(201);
    await opened(productId, ((await res.json()) as { epoch: number }).epoch, x[0]);
    const line = users(2);
    for (const u of line) await join(x[0]!, productId, u);
    await tokenOf(x[0]!, productId, line[0]!);
    // asleep on its seats: its last holder looks again at the seat's end, the other a lease later
    const lastHolder = await waitFor(
      'the room asleep, its last holder known',
      async () =>
        x.every((app) => Number.isFinite(app.services.roomAdmitter.plannedAt(productId))) &&
        x.find((app) => app.services.roomAdmitter.heldLast(productId)),
      10_000,
      50,
    );
    await lastHolder.services.roomAdmitter.stop({ release: false });
    alive.delete(lastHolder);
    const [survivor] = [...alive];
    // the first admission runs out unused (5 s): the survivor admits the next in line
    await tokenOf(survivor!, productId, line[1]!, 15_000);
  });
});
