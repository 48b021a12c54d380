/**
 * `npm run bench:persist`: orders persisted per second end to end (outbox -> BullMQ ->
 * PostgreSQL), in one run on the same servers:
 *   - one row per job: a plain BullMQ worker, one job per order, one INSERT + XDEL per job;
 *   - batched: what the product does, jobs of ENQUEUE_BATCH_SIZE orders, multi-row INSERTs.
 * Each starts from N sold orders sitting in the outbox and ends when N rows exist. Then the lag
 * of a 10 000-unit sellout with the worker running: last sale -> last row persisted.
 * Prints a table and ends with one JSON line.
 *
 * Options: --orders 20000 --sellout 10000 --single-concurrency 50 --redis-url --database-url
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Queue, Worker, type Job } from 'bullmq';
import { sql } from 'kysely';
import { loadConfig, type Config, NO_RATE_LIMITS } from '../../src/config/index.js';
import type { Db } from '../../src/db/index.js';
import { clearOutbox, readOutbox, seedProduct } from '../../src/inventory/index.js';
import { createLogger } from '../../src/log.js';
import { createCore, type Core } from '../../src/composition/core.js';
import { apiServices, startOrderQueue, startOrderWorker } from '../../src/composition/roles.js';
import { insertOrders, OrderSubmitter } from '../../src/orders/index.js';
import type { SoldOrder } from '../../src/inventory/index.js';
import { createRedis } from '../../src/redis/connection.js';
import type { Checkout } from '../../src/services/index.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const SEGMENTS = 16;

async function rows(db: Db, productId: string): Promise<number> {
  const r = await sql<{
    n: string;
  }>`select count(*) as n from orders where product_id = ${productId}`.execute(db);
  return Number(r.rows[0]!.n);
}

async function untilRows(
  db: Db,
  productId: string,
  n: number,
  timeoutMs = 600_000,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if ((await rows(db, productId)) >= n) return performance.now();
    if (performance.now() > deadline)
      throw new Error(`only ${await rows(db, productId)} of ${n} rows`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Sells `n` units of a fresh product to n shoppers; returns the product and its outbox orders.
 * @param checkout - buy through checkout (sold orders are submitted); else they stay in the outbox.
 */
async function soldOrders(rt: Core, n: number, checkout?: Checkout) {
  const productId = `b${randomBytes(3).toString('hex')}`;
  await seedProduct({ redis: rt.redis, keys: rt.keys, db: rt.db }, productId, {
    total: n,
    segments: SEGMENTS,
    strategy: 'lockfree',
  });
  let lastSale = 0;
  const CONCURRENCY = 200;
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        const req = { productId, userId: `s${i}`, quantity: 1 };
        const r = await (checkout ? checkout.buy(req) : rt.inventory.sale.purchase(req));
        if (r.kind !== 'sold') throw new Error(`purchase ${i} ended ${r.kind}`);
        lastSale = performance.now();
      }
    }),
  );
  const orders: SoldOrder[] = [];
  if (!checkout) {
    for (let s = 0; s < SEGMENTS; s++)
      orders.push(...(await readOutbox(rt.redis, rt.keys, productId, s)));
  }
  return { productId, orders, lastSale };
}

async function oneRowPerJob(rt: Core, config: Config, n: number, concurrency: number) {
  const { productId, orders } = await soldOrders(rt, n);
  const connection = createRedis(config.redis.url, { name: 'bench-single', role: 'bullmq' });
  const queue = new Queue('single', { connection, prefix: config.redis.queuePrefix });
  const worker = new Worker(
    'single',
    async (job: Job<SoldOrder>) => {
      await insertOrders(rt.db, [job.data]);
      await clearOutbox(rt.redis, rt.keys, [job.data]);
    },
    { connection, prefix: config.redis.queuePrefix, concurrency },
  );
  const started = performance.now();
  for (let i = 0; i < orders.length; i += 1_000) {
    await queue.addBulk(
      orders.slice(i, i + 1_000).map((o) => ({
        name: 'persist',
        data: o,
        opts: { jobId: `o-${o.orderId}`, removeOnComplete: true },
      })),
    );
  }
  const done = await untilRows(rt.db, productId, n);
  await worker.close();
  await queue.close();
  connection.disconnect();
  return throughput('one row per job', n, done - started);
}

/** A scenario's figures: `n` orders persisted in `ms`. */
function throughput(scenario: string, n: number, ms: number) {
  const seconds = ms / 1000;
  return {
    scenario,
    orders: n,
    seconds: Math.round(seconds * 100) / 100,
    ordersPerSec: Math.round(n / seconds),
  };
}

async function batched(rt: Core, config: Config, n: number) {
  const { productId, orders } = await soldOrders(rt, n);
  const queue = startOrderQueue(rt);
  await startOrderWorker(rt, queue);
  const submitter = new OrderSubmitter(queue, {
    batchSize: config.orders.enqueueBatchSize,
    maxDelayMs: config.orders.enqueueMaxDelayMs,
  });
  const started = performance.now();
  for (const o of orders) submitter.add(o);
  await submitter.close();
  const done = await untilRows(rt.db, productId, n);
  return throughput('batched', n, done - started);
}

async function main() {
  const { values } = parseArgs({
    options: {
      orders: { type: 'string', default: '20000' },
      sellout: { type: 'string', default: '10000' },
      'single-concurrency': { type: 'string', default: '50' },
      'redis-url': { type: 'string' },
      'database-url': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const n = Number(values.orders);
  const stack = await benchStack({
    redisUrl: values['redis-url'],
    databaseUrl: values['database-url'],
  });
  const id = randomBytes(3).toString('hex');
  const env = {
    ...process.env,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `bench${id}`,
    QUEUE_PREFIX: `{bench${id}}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    // the sweeper must not help: it would blur what each path does
    SWEEP_MIN_AGE_MS: '600000',
  };
  const config = loadConfig(env);
  const rt = createCore(config, createLogger(config));
  try {
    progress(`one row per job: ${n} orders, ${values['single-concurrency']} concurrent jobs`);
    const single = await oneRowPerJob(rt, config, n, Number(values['single-concurrency']));
    progress(
      `batched: ${n} orders, jobs of ${config.orders.enqueueBatchSize}, INSERTs of up to ${config.orders.workerBatchSize}, concurrency ${config.orders.workerConcurrency}`,
    );
    const batch = await batched(rt, config, n);

    const sellout = Number(values.sellout);
    progress(`lag: a ${sellout}-unit sellout with the worker running`);
    const { checkout } = apiServices(rt, startOrderQueue(rt));
    const t0 = performance.now();
    const sale = await soldOrders(rt, sellout, checkout);
    const last = await untilRows(rt.db, sale.productId, sellout);
    const lag = {
      units: sellout,
      saleSeconds: Math.round(((sale.lastSale - t0) / 1000) * 100) / 100,
      lagMs: Math.round(last - sale.lastSale),
    };

    const results = [single, batch];
    const figures = {
      bench: 'persist',
      machine: machine(),
      postgres: 'default durability (fsync on, synchronous_commit on)',
      results,
      ratios: { batchedVsOneRowPerJob: ratio(batch.ordersPerSec, single.ordersPerSec) },
      sellout: lag,
    };
    const text = [
      'Persistence benchmark: outbox -> BullMQ -> PostgreSQL',
      '',
      table(results),
      '',
      `batched / one row per job: ${figures.ratios.batchedVsOneRowPerJob}x`,
      `sellout of ${sellout} units: sold in ${lag.saleSeconds} s; last row persisted ${lag.lagMs} ms after the last sale`,
      '',
      JSON.stringify(figures),
    ].join('\n');
    process.stdout.write(`\n${text}\n`);
    if (!values['no-write']) saveRun('persist', text, values['update-report']);
  } finally {
    await rt.lifecycle.close();
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:persist failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
