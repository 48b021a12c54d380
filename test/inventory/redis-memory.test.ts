/**
 * A Redis at its maxmemory (noeviction) beside a sale, on one Redis and on a Redis Cluster (each
 * its own servers here: the file fills them): the sale's scripts are flagged allow-oom and keep
 * selling, the drop's controls (pause, resume, end, units, pace) keep answering, new waiting-room
 * places and refusals' Idempotency-Key records give way, and once the junk is gone every sold
 * unit becomes one order row (the sweeper re-enqueues what BullMQ could not take) and
 * reconciliation is exact (docs/catalogue.md#redis-memory).
 */
import { hash, randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { pauseWhileStoreFull } from '../../src/composition/bull-init.js';
import type { RunningApp } from '../support/app.js';
import { startApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { startTestCluster, type TestCluster } from '../support/cluster.js';
import { useNamespace } from '../support/namespace.js';
import { orderCount, reconcileOver } from '../support/orders.js';
import { startTestRedis } from '../support/servers.js';

const ns = useNamespace();
const SEGMENTS = 4;
const STOCK = 12;
const SHOPPERS = 20;
/** what is left for the junk above the used memory at the fill's start */
const MARGIN_BYTES = 4 * 1024 * 1024;
const JUNK = 'x'.repeat(64 * 1024);

let app: RunningApp;
let standalone: Awaited<ReturnType<typeof startTestRedis>> | undefined;
let cluster: TestCluster | undefined;
/** a direct connection to each master, with a hash tag its slots hold */
let masters: Array<{ conn: Redis; tag: string; junk: string[] }> = [];

beforeAll(async () => {
  let target: Record<string, string>;
  if (ns.clustered) {
    cluster = await startTestCluster({ persistence: 'none' });
    target = { REDIS_CLUSTER_NODES: cluster.nodesEnv };
  } else {
    standalone = await startTestRedis();
    target = { REDIS_URL: standalone.url };
  }
  app = await startApp(
    ns.config({
      ...target,
      SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
      ROOM_TICK_MS: '50',
      SWEEP_INTERVAL_MS: '300',
      SWEEP_MIN_AGE_MS: '1000',
      LOG_LEVEL: 'silent',
    }),
    { worker: true },
  );
  const ports = cluster ? cluster.masters.map((m) => m.port) : [standalone!.port];
  masters = await Promise.all(
    ports.map(async (port) => {
      const conn = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
      return { conn, tag: await tagOn(conn), junk: [] };
    }),
  );
});
afterAll(async () => {
  await app?.close();
  for (const m of masters) m.conn.disconnect();
  await cluster?.remove();
  await standalone?.stop();
});

/** A hash tag whose slot this master serves (any tag on a standalone server). */
async function tagOn(conn: Redis): Promise<string> {
  if (!cluster) return 'junk';
  const slots = (await conn.cluster('SLOTS')) as unknown as Array<
    [number, number, [string, number]]
  >;
  const port = conn.options.port;
  const mine = slots.filter(([, , [, p]]) => p === port);
  const overdue = deadlineOf(`a key on the master at ${port}`, 10_000);
  for (let i = 0; ; i++) {
    overdue();
    const slot = Number(await conn.cluster('KEYSLOT', `junk${i}`));
    if (mine.some(([from, to]) => slot >= from && slot <= to)) return `junk${i}`;
  }
}

const oom = (err: unknown) => err instanceof Error && err.message.startsWith('OOM ');

/** Junk written past maxmemory by a script flagged allow-oom (what the sale's scripts do). */
const PAST_LIMIT = `#!lua flags=allow-oom
redis.call('SET', KEYS[1], ARGV[1])`;

/**
 * Sets each master's maxmemory a few MB above what it uses, writes junk until it refuses a
 * write, then 512 KB more past the limit: every master stays over it (a small write is refused
 * too, whatever the sale's lock releases free meanwhile) until {@link freeJunk}.
 */
async function fillToLimit(): Promise<void> {
  for (const m of masters) {
    await m.conn.config('SET', 'maxmemory-policy', 'noeviction');
    const used = Number(/^used_memory:(\d+)/m.exec(await m.conn.info('memory'))![1]);
    await m.conn.config('SET', 'maxmemory', String(used + MARGIN_BYTES));
    const overdue = deadlineOf(`${m.tag} refusing a write past maxmemory`, 50_000);
    for (;;) {
      overdue();
      const key = `{${m.tag}}:junk:${m.junk.length}`;
      const refused = await m.conn.set(key, JUNK).then(
        () => false,
        (err: unknown) => {
          if (!oom(err)) throw err;
          return true;
        },
      );
      if (refused) break;
      m.junk.push(key);
    }
    const over = `{${m.tag}}:junk:over`;
    await m.conn.eval(PAST_LIMIT, 1, over, 'x'.repeat(512 * 1024));
    m.junk.push(over);
  }
}

/** Whether every master still refuses a write of one byte (OOM). */
async function everyMasterFull(): Promise<boolean> {
  const refused = await Promise.all(
    masters.map((m) =>
      m.conn.set(`{${m.tag}}:junk:probe`, 'x').then(
        () => m.conn.del(`{${m.tag}}:junk:probe`).then(() => false),
        (err: unknown) => oom(err),
      ),
    ),
  );
  return refused.every(Boolean);
}

async function freeJunk(): Promise<void> {
  for (const m of masters) {
    while (m.junk.length > 0) await m.conn.del(...m.junk.splice(0, 100));
    await m.conn.config('SET', 'maxmemory', '0');
  }
}

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const users = (n: number, label: string) =>
  Array.from({ length: n }, (_, i) => `${label}${i}x${randomBytes(3).toString('hex')}`);

async function join(productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    method: 'POST',
    headers: { 'x-user-id': user },
  });
  const body = (await res.json()) as { type?: string; state?: string };
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
}

async function placeOf(productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    headers: { 'x-user-id': user },
  });
  return (await res.json()) as { state?: string; saleToken?: string };
}

const tokenOf = (productId: string, user: string) =>
  waitFor(
    `${user}'s sale token`,
    async () => {
      const place = await placeOf(productId, user);
      return place.state === 'admitted' && place.saleToken;
    },
    30_000,
    50,
  );

/** A purchase; a 503 lock-timeout (busy) is sent again, any other answer returned. */
async function buy(productId: string, user: string, saleToken?: string, key?: string) {
  const overdue = deadlineOf(`an answer but lock-timeout for ${user}`, 50_000);
  for (;;) {
    overdue();
    const res = await fetch(`${app.url}/seckill`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-user-id': user,
        ...(saleToken && { 'sale-token': saleToken }),
        ...(key && { 'idempotency-key': key }),
      },
      body: JSON.stringify({ productId, quantity: 1 }),
    });
    const body = (await res.json()) as { orderId?: string; type?: string };
    if (res.status === 503 && body.type === 'urn:seckill:problem:lock-timeout') continue;
    return { status: res.status, orderId: body.orderId, type: body.type };
  }
}

/** Whether the record of the shopper's Idempotency-Key is in Redis (in any segment's place). */
async function recordKept(productId: string, user: string, key: string): Promise<boolean> {
  const name = hash('sha256', key, 'base64url');
  for (let i = 0; i < SEGMENTS; i++) {
    const place = app.rt.keys.idempotency(productId, i, user);
    if ((await app.rt.redis.exists(place.record(name))) === 1) return true;
  }
  return false;
}

describe('a Redis at its maxmemory beside a sale', () => {
  it('keeps selling exactly the stock, refuses new places 503 room-store-full, and every sale becomes one order row once memory frees', async () => {
    const productId = `p${randomBytes(4).toString('hex')}`;
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({
        strategy: 'segmented',
        segments: SEGMENTS,
        total: STOCK,
        waitingRoom: { admitPerSecond: 1_000, maxActive: 100, admittedForSeconds: 60 },
      }),
    });
    expect(seeded.status, await seeded.clone().text()).toBe(201);
    const { epoch } = (await seeded.json()) as { epoch: number };
    const line = users(SHOPPERS, 'u');
    const joined = await Promise.all(line.map((u) => join(productId, u)));
    expect(joined.map((r) => r.status)).toEqual(line.map(() => 200));

    onTestFinished(() => freeJunk());
    await fillToLimit();
    expect(await everyMasterFull()).toBe(true);

    // a new shopper gives way: no place written, a clear answer to come back
    const late = users(6, 'late');
    const refused = await Promise.all(late.map((u) => join(productId, u)));
    expect(refused.map((r) => [r.status, r.body.type, r.retryAfter])).toEqual(
      late.map(() => [503, 'urn:seckill:problem:room-store-full', '30']),
    );
    const k = app.rt.keys.room(productId, epoch);
    for (const u of late) expect(await app.rt.redis.hexists(k.places, u)).toBe(0);
    // one who holds a place is answered it
    expect((await join(productId, line[0]!)).status).toBe(200);
    // what is not the sale's is refused 503 store-unavailable: seeding, reconciling
    const other = await fetch(`${app.url}/admin/products/q${randomBytes(4).toString('hex')}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ strategy: 'segmented', segments: SEGMENTS, total: 5 }),
    });
    expect([other.status, other.headers.get('retry-after')]).toEqual([503, '30']);
    const reconciling = await fetch(`${app.url}/admin/products/${productId}/reconcile`, {
      method: 'POST',
      headers: admin,
    });
    expect(reconciling.status).toBe(503);

    // admitted (as many as there are units), then buying, all while every master is past its
    // limit: each admitted shopper sends two purchases at once, the second always with a key
    const admitted = await waitFor(
      `${STOCK} admitted`,
      async () => {
        const h = await app.rt.redis.hkeys(k.admitted);
        return h.length === STOCK && h;
      },
      30_000,
      50,
    );
    const tokens = await Promise.all(admitted.map((u) => tokenOf(productId, u)));
    const tries = admitted.flatMap((u, i) => [
      { u, i, key: i % 2 ? `a-${u}` : undefined },
      { u, i, key: `b-${u}` },
    ]);
    const answers = await Promise.all(tries.map((t) => buy(productId, t.u, tokens[t.i]!, t.key)));
    const sold = answers.filter((r) => r.status === 202);
    expect(sold).toHaveLength(STOCK);
    expect(new Set(sold.map((r) => r.orderId)).size).toBe(STOCK);
    expect(answers.filter((r) => r.status !== 202).map((r) => r.status)).toEqual(
      admitted.map(() => 409),
    );
    // one sale per shopper; a keyed sale's record is kept, a keyed refusal's gave way
    for (const u of admitted) {
      expect(tries.filter((t, j) => t.u === u && answers[j]!.status === 202)).toHaveLength(1);
    }
    const kept = await Promise.all(
      tries.map((t) => (t.key ? recordKept(productId, t.u, t.key) : false)),
    );
    expect(kept).toEqual(tries.map((t, j) => t.key !== undefined && answers[j]!.status === 202));
    // the same key again: the sale is answered as it was, no second unit
    const keyedSale = tries.findIndex((t, j) => t.key && answers[j]!.status === 202);
    const t = tries[keyedSale]!;
    const replay = await buy(productId, t.u, tokens[t.i]!, t.key);
    expect([replay.status, replay.orderId]).toEqual([202, answers[keyedSale]!.orderId]);
    // the rest of the line hears sold-out, and a purchase is refused so
    const rest = line.filter((u) => !admitted.includes(u));
    const late1 = await buy(productId, rest[0]!);
    expect([late1.status, late1.type]).toEqual([409, 'urn:seckill:problem:sold-out']);
    for (const u of rest) {
      await waitFor(
        `${u} told sold-out`,
        async () => (await placeOf(productId, u)).state === 'sold-out',
        10_000,
        50,
      );
    }
    expect(await everyMasterFull()).toBe(true);

    await freeJunk();
    await waitFor(
      `${STOCK} order rows`,
      async () => (await orderCount(app.rt.db, productId)).rows === STOCK,
      60_000,
    );
    const report = await waitFor(
      'a reconciliation with nothing pending',
      async () => {
        const r = (await reconcileOver(app.rt, productId))!;
        return r.pending === 0 && r;
      },
      30_000,
    );
    expect(report).toMatchObject({
      total: STOCK,
      remaining: 0,
      pending: 0,
      persisted: STOCK,
      persistedOrders: STOCK,
      distinctBuyers: STOCK,
      openClaims: 0,
      lostWrites: [],
      problems: [],
    });
    expect(await orderCount(app.rt.db, productId)).toEqual({ rows: STOCK, users: STOCK });

    // memory back: a new shopper gets a place again (the last reading is at most SAMPLE_MS old)
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    expect(metrics).toContain(`seckill_room_memory_refusals_total{product="${productId}"} 6`);
    await waitFor(
      'a join answered 200',
      async () => (await join(productId, late[0]!)).status === 200,
      10_000,
      100,
    );
  });
  it('gives way before the limit: from REDIS_MEMORY_SHED_AT (0.9) a new place is refused while Redis still takes writes', async () => {
    const productId = `p${randomBytes(4).toString('hex')}`;
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({
        strategy: 'segmented',
        segments: SEGMENTS,
        total: 2,
        waitingRoom: { admitPerSecond: 1_000, maxActive: 100, admittedForSeconds: 60 },
      }),
    });
    expect(seeded.status).toBe(201);
    const [held, late] = users(2, 'v');
    // a reading of the first test's full masters may be answered for a moment (under TRUSTED_MS)
    await waitFor('a place', async () => (await join(productId, held!)).status === 200, 10_000, 50);
    // every master at 95 % of its maxmemory: short, and still taking writes
    for (const m of masters) {
      const used = Number(/^used_memory:(\d+)/m.exec(await m.conn.info('memory'))![1]);
      await m.conn.config('SET', 'maxmemory', String(Math.ceil(used / 0.95)));
    }
    try {
      // the next reading of the room's master says so (one younger than SAMPLE_MS is trusted)
      const refused = await waitFor(
        'a join refused',
        async () => {
          const r = await join(productId, users(1, 'w')[0]!);
          return r.status !== 200 && r;
        },
        10_000,
        50,
      );
      expect([refused.status, refused.body.type]).toEqual([
        503,
        'urn:seckill:problem:room-store-full',
      ]);
      expect((await join(productId, held!)).status).toBe(200);
      // not full: every master takes a write
      for (const m of masters) expect(await m.conn.set(`{${m.tag}}:junk:probe`, 'x')).toBe('OK');
    } finally {
      for (const m of masters) {
        await m.conn.del(`{${m.tag}}:junk:probe`);
        await m.conn.config('SET', 'maxmemory', '0');
      }
    }
    await waitFor(
      'a join answered 200',
      async () => (await join(productId, late!)).status === 200,
      10_000,
      100,
    );
  });
  it("runs the drop's controls past maxmemory: pause, units, resume, pace and end answer 200 and take effect", async () => {
    const productId = `d${randomBytes(4).toString('hex')}`;
    const roomId = `r${randomBytes(4).toString('hex')}`;
    const seed = async (id: string, extra: object) => {
      const res = await fetch(`${app.url}/admin/products/${id}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ strategy: 'segmented', segments: SEGMENTS, total: 4, ...extra }),
      });
      expect(res.status, await res.clone().text()).toBe(201);
    };
    await seed(productId, {});
    await seed(roomId, {
      waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 60 },
    });
    const control = async (id: string, path: string, body?: object, method = 'POST') => {
      const res = await fetch(`${app.url}/admin/products/${id}/${path}`, {
        method,
        headers: admin,
        ...(body && { body: JSON.stringify(body) }),
      });
      const answer = (await res.json()) as {
        changed?: boolean;
        units?: number;
        product?: { status: string; paused: boolean; total: number; remaining: number };
        waitingRoom?: { admitPerSecond: number; maxActive: number };
      };
      return { status: res.status, ...answer };
    };
    const shoppers = users(4, 'd');
    expect((await buy(productId, shoppers[0]!)).status).toBe(202);

    onTestFinished(() => freeJunk());
    await fillToLimit();
    expect(await everyMasterFull()).toBe(true);

    const paused = await control(productId, 'pause');
    expect([paused.status, paused.changed, paused.product?.status]).toEqual([200, true, 'paused']);
    const refused = await buy(productId, shoppers[1]!);
    expect([refused.status, refused.type]).toEqual([503, 'urn:seckill:problem:sale-paused']);
    const added = await control(productId, 'units', { add: 4 });
    expect([added.status, added.units, added.product?.remaining]).toEqual([200, 4, 7]);
    const resumed = await control(productId, 'resume');
    expect([resumed.status, resumed.changed, resumed.product?.status]).toEqual([200, true, 'live']);
    const sold = await Promise.all(shoppers.slice(1).map((u) => buy(productId, u)));
    expect(sold.map((r) => r.status)).toEqual([202, 202, 202]);
    const paced = await control(roomId, 'waiting-room', { maxActive: 7 }, 'PATCH');
    expect([paced.status, paced.waitingRoom?.maxActive]).toEqual([200, 7]);
    const ended = await control(productId, 'end');
    expect([ended.status, ended.product?.status]).toEqual([200, 'ended']);
    const late = await buy(productId, users(1, 'late')[0]!);
    expect([late.status, late.type]).toEqual([410, 'urn:seckill:problem:ended']);
    expect(await everyMasterFull()).toBe(true);

    await freeJunk();
    await waitFor(
      '4 order rows',
      async () => (await orderCount(app.rt.db, productId)).rows === 4,
      60_000,
    );
    const report = await waitFor(
      'a reconciliation with nothing pending',
      async () => {
        const r = (await reconcileOver(app.rt, productId))!;
        return r.pending === 0 && r;
      },
      30_000,
    );
    expect(report).toMatchObject({
      total: 8,
      added: 4,
      remaining: 4,
      pending: 0,
      persisted: 4,
      persistedOrders: 4,
      distinctBuyers: 4,
      openClaims: 0,
      lostWrites: [],
      problems: [],
    });
  });
  it('pauses a BullMQ worker that Redis refuses for memory, and resumes it: the job runs once memory frees', async () => {
    const name = `full${randomBytes(3).toString('hex')}`;
    const opts = {
      connection: app.rt.bullConnection('test-full'),
      prefix: app.rt.config.redis.queuePrefix,
    };
    const queue = new Queue(name, opts);
    const worker = new Worker(name, async () => 'done', { ...opts, autorun: false });
    onTestFinished(async () => {
      await worker.close();
      await queue.close();
    });
    pauseWhileStoreFull(worker);
    let refusals = 0;
    worker.on('error', () => refusals++);
    const job = await queue.add('work', {});
    onTestFinished(() => freeJunk());
    await fillToLimit();
    void worker.run();
    // each fetch is refused: without the pause BullMQ asks again at once, hundreds a second
    await waitFor('the worker paused', async () => worker.isPaused(), 10_000, 20);
    expect(refusals).toBeGreaterThanOrEqual(1);
    await freeJunk();
    await waitFor(
      'the job done',
      async () => (await queue.getJobState(job.id!)) === 'completed',
      20_000,
    );
    expect(worker.isPaused()).toBe(false);
  });
});
