/**
 * What operators watch on the worker side, read when /metrics is scraped: the order queue's jobs
 * by state, and per product its outbox backlog (sold, not yet persisted) and remaining stock.
 */
import type { Queue } from 'bullmq';
import { Gauge, type Registry } from 'prom-client';
import { readProductStates } from '../inventory/index.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';

/** Active products read per scrape (archived sales are left out; a scrape must stay cheap). */
const MAX_PRODUCTS = 200;

const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const;

export function registerOrderGauges(opts: {
  registry: Registry;
  queue: Queue;
  redis: RedisClient;
  keys: Keys;
}): void {
  const { registry, queue, redis, keys } = opts;
  new Gauge({
    name: 'seckill_queue_jobs',
    help: 'Jobs of the order queue by state (persist batches, expiries, the sweeper)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const counts = await queue.getJobCounts(...JOB_STATES);
      for (const state of JOB_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
  // one read of every product serves both per-product gauges
  let reading:
    Promise<Array<{ productId: string; backlog: number; remaining: number }>> | undefined;
  const products = () =>
    (reading ??= (async () => {
      const states = await readProductStates({ redis, keys }, MAX_PRODUCTS);
      return states.map((s) => ({
        productId: s.productId,
        backlog: s.segments.reduce((a, seg) => a + seg.pending, 0),
        remaining: s.remaining,
      }));
    })().finally(() => setImmediate(() => (reading = undefined))));
  new Gauge({
    name: 'seckill_outbox_backlog',
    help: "Orders sold and still only in a product's outboxes (not yet persisted)",
    labelNames: ['product'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const p of await products()) this.set({ product: p.productId }, p.backlog);
    },
  });
  new Gauge({
    name: 'seckill_stock_remaining',
    help: 'Units left on sale, per product (its current epoch)',
    labelNames: ['product'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const p of await products()) this.set({ product: p.productId }, p.remaining);
    },
  });
}
