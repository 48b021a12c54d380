/**
 * What operators watch on the worker side, read when /metrics is scraped: the order queue's jobs
 * by state, and per product its outbox backlog (sold, not yet persisted) and remaining stock.
 *
 * Every worker replica reads these from the same Redis, so each exports the same value:
 * aggregate them with `max`, never `sum` (two replicas would show twice the stock).
 */
import type { Queue } from 'bullmq';
import { Gauge, type Registry } from 'prom-client';
import type { ProductState } from '../inventory/index.js';
import { boundedRead } from '../metrics.js';

/** Active products read per scrape (archived sales are left out; a scrape must stay cheap). */
const MAX_PRODUCTS = 200;

const JOB_STATES = ['waiting', 'active', 'delayed', 'failed', 'prioritized'] as const;

export function registerOrderGauges(opts: {
  registry: Registry;
  queue: Queue;
  /** the products as they stand (inventory's ProductStore, which the dashboard's feed reads too) */
  products: { states(max: number): Promise<ProductState[]> };
}): void {
  const { registry, queue } = opts;
  new Gauge({
    name: 'seckill_queue_jobs',
    help: 'Jobs of the order queue by state (persist batches, expiries, the sweeper); the same in every worker: aggregate with max',
    labelNames: ['state'],
    registers: [registry],
    // merged across processes (AggregatorRegistry): shared state, not a per-process share
    aggregator: 'max',
    async collect() {
      this.reset();
      const counts = await boundedRead(queue.getJobCounts(...JOB_STATES), 'queue counts').catch(
        () => undefined,
      );
      if (!counts) return;
      for (const state of JOB_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
  // one read of every product serves both per-product gauges
  type ProductGauges = { productId: string; backlog: number; remaining: number };
  let reading: Promise<ProductGauges[]> | undefined;
  const products = () =>
    (reading ??= boundedRead(
      (async () => {
        const states = await opts.products.states(MAX_PRODUCTS);
        return states.map((s) => ({
          productId: s.productId,
          backlog: s.segments.reduce((a, seg) => a + seg.pending, 0),
          remaining: s.remaining,
        }));
      })(),
      'product states',
    )
      .catch((): ProductGauges[] => [])
      .finally(() => setImmediate(() => (reading = undefined))));
  new Gauge({
    name: 'seckill_outbox_backlog',
    help: "Orders sold and still only in a product's outboxes (not yet persisted); the same in every worker: aggregate with max",
    labelNames: ['product'],
    registers: [registry],
    aggregator: 'max',
    async collect() {
      this.reset();
      for (const p of await products()) this.set({ product: p.productId }, p.backlog);
    },
  });
  new Gauge({
    name: 'seckill_stock_remaining',
    help: 'Units left on sale, per product (its current epoch); the same in every worker: aggregate with max',
    labelNames: ['product'],
    registers: [registry],
    aggregator: 'max',
    async collect() {
      this.reset();
      for (const p of await products()) this.set({ product: p.productId }, p.remaining);
    },
  });
}
