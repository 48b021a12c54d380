/**
 * Faults around persistence, each against its own server where the test stops one: a worker
 * SIGKILLed mid-batch, PostgreSQL down for 10 s mid-sale, Redis restarted (AOF) mid-sale.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { seedProduct } from '../../src/inventory/index.js';
import { Keys } from '../../src/redis/keys.js';
import { runCli, waitFor } from '../support/cli.js';
import { sleep } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';
import {
  orderCount,
  reconcileOver,
  stackProcess,
  type StackProcess,
  waitForDrainedOutbox,
  waitForRows,
} from '../support/orders.js';
import { freePort } from '../support/ports.js';
import { startTestPostgres, startTestRedis, tempDir } from '../support/servers.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
const fast = {
  SWEEP_INTERVAL_MS: '500',
  SWEEP_MIN_AGE_MS: '3000',
  WORKER_LOCK_MS: '2000',
  LOCK_WAIT_MS: '1000',
};
/** Env for a `seckill worker` child in this file's namespace: one job at a time, 25-row INSERTs. */
const workerEnv = (extra: Record<string, string> = {}) => ({
  REDIS_URL: ns.redisUrl,
  DATABASE_URL: ns.databaseUrl,
  KEY_PREFIX: ns.id,
  QUEUE_PREFIX: `{${ns.id}q}`,
  LOG_LEVEL: 'warn',
  // several workers at once: no probe port each
  WORKER_PORT: '0',
  WORKER_CONCURRENCY: '1',
  WORKER_BATCH_SIZE: '25',
  ...fast,
  ...extra,
});
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const newProduct = () => `p${randomBytes(4).toString('hex')}`;

async function started(p: Promise<StackProcess>): Promise<StackProcess> {
  const s = await p;
  cleanups.push(() => s.close());
  return s;
}

async function sellTo(s: StackProcess, productId: string, users: string[]) {
  const out = await Promise.all(users.map((u) => s.buy(productId, u)));
  return out.filter((o) => o === 'accepted').length;
}

describe('a worker SIGKILLed mid-batch', () => {
  it('persists every order exactly once after a restart', { timeout: 120_000 }, async () => {
    const config = ns.config({ ...fast, ENQUEUE_BATCH_SIZE: '500' });
    const api = await started(stackProcess(config));
    const productId = newProduct();
    await seedProduct({ redis: api.rt.redis, keys, db: api.rt.db }, productId, {
      total: 3_000,
      segments: 8,
      strategy: 'lockfree',
    });
    const users = Array.from({ length: 3_000 }, (_, i) => `k${i}`);
    expect(await sellTo(api, productId, users)).toBe(3_000);

    const env = workerEnv(); // 20 INSERTs per 500-order job: a kill lands mid-job
    const first = runCli(['worker'], env);
    cleanups.push(() => first.child.kill('SIGKILL'));
    const atKill = await waitFor(
      'some rows, not all',
      async () => {
        const { rows } = await orderCount(api.rt.db, productId);
        return rows > 0 && rows < 3_000 ? rows : undefined;
      },
      60_000,
      10,
    );
    first.child.kill('SIGKILL');
    await first.exited;

    expect(atKill).toBeLessThan(3_000);

    const second = runCli(['worker'], env);
    cleanups.push(async () => {
      second.child.kill('SIGTERM');
      await second.exited;
    });
    await waitForRows(api.rt.db, productId, 3_000, 60_000);
    await waitForDrainedOutbox(api, productId);
    expect(await orderCount(api.rt.db, productId)).toEqual({ rows: 3_000, users: 3_000 });
    expect((await reconcileOver({ redis: api.rt.redis, keys, db: api.rt.db }, productId))!.ok).toBe(
      true,
    );
  });
});

describe('a worker stopped with SIGTERM', () => {
  it('finishes the batch in hand, exits 0, and leaves the rest to the next worker', async () => {
    // Jobs of exactly 500 orders (no partial batch flushed by the delay timer), so a cut job shows.
    const config = ns.config({
      ...fast,
      ENQUEUE_BATCH_SIZE: '500',
      ENQUEUE_MAX_DELAY_MS: '60000',
    });
    const api = await started(stackProcess(config));
    const productId = newProduct();
    await seedProduct({ redis: api.rt.redis, keys, db: api.rt.db }, productId, {
      total: 3_000,
      segments: 4,
      strategy: 'lockfree',
    });
    expect(
      await sellTo(
        api,
        productId,
        Array.from({ length: 3_000 }, (_, i) => `t${i}`),
      ),
    ).toBe(3_000);
    // Only the queue (no sweeper rescue): the count below must come from whole jobs.
    const env = workerEnv({ SWEEP_MIN_AGE_MS: '600000' });
    const first = runCli(['worker'], env);
    cleanups.push(() => first.child.kill('SIGKILL'));
    await waitFor(
      'a job under way',
      async () => {
        const { rows } = await orderCount(api.rt.db, productId);
        return rows > 0 && rows % 500 !== 0;
      },
      60_000,
      5,
    );
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const { rows: atExit } = await orderCount(api.rt.db, productId);
    expect(atExit % 500).toBe(0); // the batch in hand was finished, not cut
    expect(atExit).toBeLessThan(3_000);

    const second = runCli(['worker'], env);
    cleanups.push(async () => {
      second.child.kill('SIGTERM');
      await second.exited;
    });
    await waitForRows(api.rt.db, productId, 3_000, 60_000);
    expect(await orderCount(api.rt.db, productId)).toEqual({ rows: 3_000, users: 3_000 });
  });
});

describe('PostgreSQL down for 10 s in the middle of a sale', () => {
  it('keeps selling, then persists every order exactly once', async () => {
    const dir = tempDir('pg-down');
    cleanups.push(() => dir.remove());
    // the cluster in a folder of its own: its log file goes next to it, inside the temp dir
    let pg = await startTestPostgres(join(dir.path, 'cluster'));
    cleanups.push(() => pg.stop());
    const migrator = createDb(pg.url);
    await migrateToLatest(migrator);
    await migrator.destroy();
    const config = ns.config({ ...fast, DATABASE_URL: pg.url });
    const node = await started(stackProcess(config, { worker: true }));
    const productId = newProduct();
    await seedProduct({ redis: node.rt.redis, keys, db: node.rt.db }, productId, {
      total: 1_500,
      segments: 4,
      strategy: 'segmented',
    });
    const wave = (from: number, n: number) =>
      sellTo(
        node,
        productId,
        Array.from({ length: n }, (_, i) => `w${from + i}`),
      );
    let sold = await wave(0, 500);
    await waitForRows(node.rt.db, productId, 1, 20_000);

    await pg.stop();
    sold += await wave(500, 700); // the sale goes on: it only needs Redis
    // the scenario: PostgreSQL stays down while the sale goes on
    await sleep(10_000);
    pg = await startTestPostgres(join(dir.path, 'cluster'), pg.port);
    sold += await wave(1_200, 600);
    expect(sold).toBe(1_500);

    await waitForRows(node.rt.db, productId, 1_500, 60_000);
    await waitForDrainedOutbox(node, productId);
    expect(await orderCount(node.rt.db, productId)).toEqual({ rows: 1_500, users: 1_500 });
    expect(
      (await reconcileOver({ redis: node.rt.redis, keys, db: node.rt.db }, productId))!.ok,
    ).toBe(true);
  });
});

describe('Redis restarted (AOF) in the middle of a sale', () => {
  it('keeps stock, markers and outbox; reconciliation is clean afterwards', async () => {
    const redis = await startTestRedis({ persistence: 'aof' });
    cleanups.push(() => redis.stop());
    const config = ns.config({ ...fast, REDIS_URL: redis.url });
    const api = await started(stackProcess(config));
    const productId = newProduct();
    await seedProduct({ redis: api.rt.redis, keys, db: api.rt.db }, productId, {
      total: 800,
      segments: 4,
      strategy: 'lockfree',
    });
    const sold1 = await sellTo(
      api,
      productId,
      Array.from({ length: 500 }, (_, i) => `r${i}`),
    );
    expect(sold1).toBe(500);
    const snapshot = async () => {
      const r = api.rt.redis;
      const out: unknown[] = [];
      for (let i = 0; i < 4; i++) {
        const k = keys.segment(productId, i);
        out.push(await r.hgetall(k.state), await r.hgetall(k.buyers), await r.xlen(k.outbox));
      }
      return out;
    };
    const before = await snapshot();
    await redis.restart();
    await waitFor('redis back', async () => (await api.rt.redis.ping()) === 'PONG', 20_000);
    expect(await snapshot()).toEqual(before);

    // a worker comes up after the restart; the queue and the outbox survived too
    const worker = await started(stackProcess(config, { worker: true }));
    const sold2 = await sellTo(
      api,
      productId,
      Array.from({ length: 500 }, (_, i) => `s${i}`),
    );
    expect(sold2).toBe(300);
    await waitForRows(worker.rt.db, productId, 800, 60_000);
    await waitForDrainedOutbox(api, productId);
    expect(await orderCount(worker.rt.db, productId)).toEqual({ rows: 800, users: 800 });
    const report = (await reconcileOver({ redis: api.rt.redis, keys, db: api.rt.db }, productId))!;
    expect(report).toMatchObject({ ok: true, remaining: 0, persisted: 800 });
  });
});

describe('seckill worker on WORKER_PORT', () => {
  it('serves /healthz, /readyz and /metrics with the queue, outbox and stock gauges', async () => {
    const config = ns.config(fast);
    const api = await started(stackProcess(config));
    const productId = newProduct();
    await seedProduct({ redis: api.rt.redis, keys, db: api.rt.db }, productId, {
      total: 50,
      segments: 4,
      strategy: 'lockfree',
    });
    // sold before any worker runs: 20 orders wait in the outboxes
    expect(
      await sellTo(
        api,
        productId,
        Array.from({ length: 20 }, (_, i) => `g${i}`),
      ),
    ).toBe(20);
    const port = await freePort();
    const worker = runCli(['worker'], { ...workerEnv(), WORKER_PORT: String(port) });
    cleanups.push(async () => {
      worker.child.kill('SIGTERM');
      await worker.exited;
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(
      () => `the worker's probes (output:\n${worker.output()})`,
      async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200,
      30_000,
    );
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await waitForRows(api.rt.db, productId, 20, 30_000);
    await waitForDrainedOutbox(api, productId);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^seckill_orders_persisted_total 20$/m);
    expect(metrics).toMatch(/^seckill_queue_jobs\{state="failed"\} 0$/m);
    expect(metrics).toContain(`seckill_outbox_backlog{product="${productId}"} 0`);
    expect(metrics).toContain(`seckill_stock_remaining{product="${productId}"} 30`);
    expect(worker.output()).toContain(`/healthz /readyz /metrics on 127.0.0.1:${port}`);
  });
});
