import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProduct } from '../../src/inventory/index.js';
import { readOutbox } from '../../src/inventory/index.js';
import { Keys } from '../../src/redis/keys.js';
import { waitFor } from '../support/cli.js';
import { barrier, sleep } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';
import {
  orderCount,
  outboxPending,
  reconcileOver,
  stackProcess,
  type StackProcess,
  waitForDrainedOutbox,
  waitForRows,
} from '../support/orders.js';
import { orderSold } from '../support/sale.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';

const ns = useNamespace();
const config = ns.config({
  // 3 000 buyers in one test process: a longer wait than the default avoids a storm of 503 retries
  LOCK_WAIT_MS: '1000',
  SWEEP_INTERVAL_MS: '300',
  SWEEP_MIN_AGE_MS: '500',
  // a spill claim is settled after the idempotency lease
  IDEMPOTENCY_LEASE_MS: '1000',
  WORKER_LOCK_MS: '2000',
  WORKER_BATCH_SIZE: '200',
});
const keys = new Keys(ns.id);
let api: StackProcess[];
let worker: StackProcess;

beforeAll(async () => {
  api = await Promise.all([stackProcess(config), stackProcess(config), stackProcess(config)]);
  worker = await stackProcess(config, { worker: true });
});
afterAll(async () => {
  await Promise.all([...api, worker].map((p) => p.close()));
});

const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const deps = () => ({ redis: api[0]!.rt.redis, keys, db: api[0]!.rt.db });

describe('every sale becomes exactly one order row', () => {
  it('a 1 000-unit sale bought by 3 000 concurrent users ends with 1 000 rows and a clean reconciliation', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 1_000, segments: 16, strategy: 'segmented' });
    const ready = barrier(3_000);
    const outcomes = await Promise.all(
      Array.from({ length: 3_000 }, async (_, i) => {
        await ready();
        return api[i % api.length]!.buy(productId, `user${i}`);
      }),
    );

    expect(outcomes.filter((o) => o === 'accepted').length).toBe(1_000);
    expect(outcomes.filter((o) => o === 'sold-out').length).toBe(2_000);
    await waitForRows(worker.rt.db, productId, 1_000);
    await waitForDrainedOutbox(api[0]!, productId);
    expect(await orderCount(worker.rt.db, productId)).toEqual({ rows: 1_000, users: 1_000 });
    const report = (await reconcileOver(deps(), productId))!;
    expect(report).toMatchObject({
      ok: true,
      total: 1_000,
      remaining: 0,
      pending: 0,
      persisted: 1_000,
      persistedOrders: 1_000,
      distinctBuyers: 1_000,
      openClaims: 0,
    });
  });

  it('the API hands sold orders to the queue in batches (one job per batch)', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 5, segments: 2, strategy: 'lockfree' });
    const sold = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        orderSold(api[0]!.rt.inventory.sale.purchase({ productId, userId: `b${i}`, quantity: 1 })),
      ),
    );
    for (const p of sold) api[0]!.submit(p);
    const job = await waitFor(
      'the batch job',
      async () => await api[0]!.queue.getJob(`o-${sold[0]!.orderId}`),
      30_000,
      20,
    );
    expect(
      (job.data as { orders: Array<{ orderId: string }> }).orders.map((o) => o.orderId),
    ).toEqual(sold.map((p) => p.orderId));
    await waitForRows(worker.rt.db, productId, 5, 20_000);
  });

  it('a crash between the deduct and the enqueue: the sweeper persists the order, exactly once', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 5, segments: 2, strategy: 'lockfree' });
    // sold, but never handed to the queue (as if the API died right after the deduct)
    expect(await api[0]!.buy(productId, 'crashy', { submit: false })).toBe('accepted');
    await waitForRows(worker.rt.db, productId, 1, 20_000);
    // the scenario: several more sweeps, for a second persist that must not come
    await sleep(1_500);
    expect(await orderCount(worker.rt.db, productId)).toEqual({ rows: 1, users: 1 });
    expect(await outboxPending(api[0]!, productId)).toBe(0);
    expect((await reconcileOver(deps(), productId))!.ok).toBe(true);
  });

  it('the same order enqueued twice, and again after its job was removed, is one row', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 5, segments: 1, strategy: 'lockfree' });
    await api[0]!.buy(productId, 'twice', { submit: false });
    const [order] = await readOutbox(api[0]!.rt.redis, keys, productId, 0);
    const q = api[0]!.queue;
    await q.add('persist', { orders: [order] }, { jobId: 'dup-a' });
    await q.add('persist', { orders: [order] }, { jobId: 'dup-b' });
    await waitForRows(worker.rt.db, productId, 1, 20_000);
    await waitFor(
      'both jobs done',
      async () =>
        (await q.getJobState('dup-b')) === 'completed' &&
        (await q.getJobState('dup-a')) === 'completed',
      20_000,
    );
    await (await q.getJob('dup-a'))!.remove();
    const again = await q.add('persist', { orders: [order] }, { jobId: 'dup-a' });
    await waitFor(
      're-added job done',
      async () => (await again.getState()) === 'completed',
      20_000,
    );
    expect(await orderCount(worker.rt.db, productId)).toEqual({ rows: 1, users: 1 });
  });

  it('a spill claim left open by a crash is settled by the sweeper from the outbox', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 4, segments: 2, strategy: 'lockfree' });
    const redis = api[0]!.rt.redis;
    const home = keys.segment(productId, 0);
    // finalised-later case: a claim whose spill deduct happened (order in segment 1's outbox)
    const { deduct } = await import('../../src/inventory/sale/protocol.js');
    const base = {
      epoch: 1,
      fence: 0,
      quantity: 1,
      productId,
      homeSegment: 0,
      touchedAt: Date.now(),
    };
    const soldId = '00000000-0000-4000-8000-000000000001';
    const lostId = '00000000-0000-4000-8000-000000000002';
    expect(
      (
        await deduct(redis, home, {
          ...base,
          mode: 'claim',
          userId: 'sold',
          orderId: soldId,
          segment: 0,
        })
      ).code,
    ).toBe('spill');
    expect(
      (
        await deduct(redis, keys.segment(productId, 1), {
          ...base,
          mode: 'spill',
          userId: 'sold',
          orderId: soldId,
          segment: 1,
        })
      ).code,
    ).toBe('ok');
    // released case: a claim whose spill never happened
    expect(
      (
        await deduct(redis, home, {
          ...base,
          mode: 'claim',
          userId: 'lost',
          orderId: lostId,
          segment: 0,
        })
      ).code,
    ).toBe('spill');
    await waitFor('claims settled', async () => (await redis.hlen(home.claims)) === 0, 20_000);
    expect(await redis.hget(home.buyers, 'sold')).toBe(`1:${soldId}`);
    expect(await redis.hget(home.buyers, 'lost')).toBeNull();
    await waitForRows(worker.rt.db, productId, 1, 20_000);
    expect((await reconcileOver(deps(), productId))!).toMatchObject({
      ok: true,
      remaining: 3,
      persisted: 1,
    });
  });

  it('reconciliation is exact while the sale and the workers run', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 100_000, segments: 8, strategy: 'segmented' });
    let selling = true;
    // paced (~1,000 purchases/s at most) so the workers keep up and persist sales made after a
    // cut: unpaced, the lock-free-fast segmented sale outruns them and only old orders get rows
    const buyers = Array.from({ length: 20 }, async (_, b) => {
      // the scenario: a paced load that runs until the test stops it
      for (let i = 0; selling; i++) {
        await api[b % api.length]!.buy(productId, `live${b}-${i}`);
        await sleep(20); // the scenario: pacing
      }
    });
    const reports = [];
    try {
      // the scenario: the paced load runs a while before the first report
      await sleep(300);
      // a pause between the Redis cut and the PostgreSQL read lets later sales get persisted
      // the scenario: a pause between the Redis cut and the PostgreSQL read
      const hooks = { beforeDbRead: () => sleep(150) };
      // at least 6 reports, and on until one saw sales persisted after its cut (what this test
      // is about; on a loaded machine the workers may persist none in a given 150 ms)
      for (let i = 0; i < 40; i++) {
        reports.push((await reconcileOver(deps(), productId, hooks))!);
        if (i >= 5 && reports.some((r) => r.live && r.afterCut > 0)) break;
      }
    } finally {
      selling = false;
      await Promise.all(buyers);
    }
    expect(reports.some((r) => r.live && r.afterCut > 0)).toBe(true);
    for (const r of reports) expect(r.problems).toEqual([]);
  });

  it('reconciliation works on a server whose script cache is empty (a replica a failover promoted)', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 4, segments: 2, strategy: 'lockfree' });
    await api[0]!.buy(productId, 'f1');
    expect((await reconcileOver(deps(), productId))!.ok).toBe(true);
    const redis = api[0]!.rt.redis;
    const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
    for (const n of nodes) await n.script('FLUSH');
    const report = (await reconcileOver(deps(), productId))!;
    expect(report.problems).toEqual([]);
    expect(report.remaining + report.pending + report.persisted).toBe(4);
  });

  it('reconciliation reports a unit that went missing, and exits the CLI non-zero', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 3, segments: 1, strategy: 'lockfree' });
    await api[0]!.buy(productId, 'r1');
    await waitForRows(worker.rt.db, productId, 1, 20_000);
    await api[0]!.rt.redis.hincrby(keys.segment(productId, 0).state, STATE_FIELD.stock, -1); // a unit vanishes
    const report = (await reconcileOver(deps(), productId))!;
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      'segment 0: seeded 3 != stock 1 + sold 1 - returned 0',
      'units: seeded 3 != remaining 1 + pending 0 + persisted 1 - returned 0',
    ]);
  });
});

describe('GET /orders/:id', () => {
  it('is pending, then persisted; only the buyer or an admin may read it', async () => {
    const { startApp } = await import('../support/app.js');
    const app = await startApp(config);
    try {
      const productId = newProduct();
      await seedProduct(deps(), productId, { total: 2, segments: 2, strategy: 'segmented' });
      // the app has no worker: the order stays pending until the shared worker takes it
      const res = await fetch(`${app.url}/seckill`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-id': 'reader' },
        body: JSON.stringify({ productId }),
      });
      const { orderId } = (await res.json()) as { orderId: string };
      const get = (user?: string, admin = false) =>
        fetch(`${app.url}/orders/${orderId}`, {
          headers: {
            ...(user && { 'x-user-id': user }),
            ...(admin && { authorization: `Bearer ${ns.adminToken}` }),
          },
        });
      const first = (await (await get('reader')).json()) as { status: string };
      expect(['pending', 'persisted']).toContain(first.status);
      await waitForRows(worker.rt.db, productId, 1, 20_000);
      expect(await (await get('reader')).json()).toMatchObject({
        orderId,
        status: 'persisted',
        userId: 'reader',
        productId,
      });
      expect((await get('someone-else')).status).toBe(404);
      expect((await get(undefined, true)).status).toBe(200);
      expect(
        (await fetch(`${app.url}/orders/not-a-uuid`, { headers: { 'x-user-id': 'reader' } }))
          .status,
      ).toBe(404);
      const rec = await fetch(`${app.url}/admin/products/${productId}/reconcile`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ns.adminToken}` },
      });
      expect(await rec.json()).toMatchObject({ ok: true, persisted: 1, remaining: 1 });
      const view = (await (
        await fetch(`${app.url}/admin/products/${productId}`, {
          headers: { authorization: `Bearer ${ns.adminToken}` },
        })
      ).json()) as {
        segments: Array<{ stock: number; sold: number; pending: number; persisted: number }>;
      };
      expect(view.segments.reduce((a, s) => a + s.persisted, 0)).toBe(1);
      expect(view.segments.reduce((a, s) => a + s.sold, 0)).toBe(1);
      const board = await fetch(`${app.url}/admin/queues`, {
        headers: { authorization: `Bearer ${ns.adminToken}` },
      });
      expect(board.status).toBe(200);
      expect((await fetch(`${app.url}/admin/queues`)).status).toBe(401);
    } finally {
      await app.close();
    }
  });
});
