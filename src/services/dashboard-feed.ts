/**
 * What the live dashboard shows, one snapshot per tick (~2 a second) shared by every viewer of
 * this process, and none while nobody watches. Aggregated across API processes: stock and
 * segments come from Redis, order states from PostgreSQL, and rates from the merged /metrics
 * text (every API process's counters when API_PROCESSES > 1), as differences between ticks.
 */
import type { Queue } from 'bullmq';
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { readProductStates, type ProductState } from '../inventory/index.js';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { parseMetrics, quantile, type Counters } from './metrics-text.js';

/** Products shown: the active ones staying longest (upcoming, live, just sold from), by id. */
const MAX_PRODUCTS = 20;

export interface DashboardSnapshot {
  at: number;
  products: Array<{
    productId: string;
    epoch: number;
    total: number;
    remaining: number;
    status: ProductState['status'];
    /** first tick this process saw it with nothing left (ms), if it ran out while watched */
    soldOutAt: number | null;
    segments: Array<{ segment: number; stock: number; sold: number; shard?: string }>;
    /** order rows of the current sale by state: final, awaiting_payment, paid, ... */
    orders: Record<string, number>;
  }>;
  /** per second over the last tick, POST /seckill */
  rates: {
    accepted: number;
    refused409: number;
    limited429: number;
    busy503: number;
    lockTimeouts: number;
  };
  /** ms, POST /seckill over the last tick (null without requests) */
  latency: { p50: number | null; p99: number | null };
  queue: Record<string, number>;
  outboxBacklog: number;
  persistedTotal: number;
}

export interface DashboardFeedDeps {
  redis: RedisClient;
  keys: Keys;
  db: Db;
  queue?: Queue | undefined;
  metricsText: () => Promise<string>;
  intervalMs?: number;
}

export class DashboardFeed {
  private readonly listeners = new Map<(s: DashboardSnapshot) => void, () => void>();
  private timer: NodeJS.Timeout | undefined;
  private previous: { at: number; counters: Counters } | undefined;
  private readonly soldOutAt = new Map<string, number>();
  private ticking = false;

  constructor(private readonly deps: DashboardFeedDeps) {}

  /**
   * Calls `listener` with every snapshot until the returned function is called; `end` when the
   * feed closes (shutdown), so the viewer's stream can end.
   */
  subscribe(listener: (s: DashboardSnapshot) => void, end: () => void = () => {}): () => void {
    this.listeners.set(listener, end);
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.deps.intervalMs ?? 500);
      this.timer.unref();
      void this.tick();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Open dashboard streams in this process. */
  get viewers(): number {
    return this.listeners.size;
  }

  /** Shutdown: every viewer's stream ends. */
  close(): void {
    const ends = [...this.listeners.values()];
    this.listeners.clear();
    this.stop();
    for (const end of ends) end();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.previous = undefined;
  }

  private async tick(): Promise<void> {
    if (this.ticking) return; // a slow store: skip a tick rather than pile them up
    this.ticking = true;
    try {
      const s = await this.snapshot();
      for (const l of this.listeners.keys()) l(s);
    } catch {
      // a store away for a moment: the next tick tries again (the page shows the last one)
    } finally {
      this.ticking = false;
    }
  }

  async snapshot(): Promise<DashboardSnapshot> {
    const at = Date.now();
    const counters = parseMetrics(await this.deps.metricsText());
    const prev = this.previous;
    this.previous = { at, counters };
    const seconds = prev ? Math.max(0.001, (at - prev.at) / 1_000) : 0;
    const rate = (name: string, match: Record<string, string>) =>
      prev ? Math.max(0, counters.sum(name, match) - prev.counters.sum(name, match)) / seconds : 0;
    const seckill = { method: 'POST', route: '/seckill' };
    const buckets = (c: Counters) => c.buckets('http_request_duration_seconds', seckill);
    const delta = prev
      ? buckets(counters).map(
          ([le, n], i) => [le, n - (buckets(prev.counters)[i]?.[1] ?? 0)] as [number, number],
        )
      : [];
    const products = await this.products(at);
    return {
      at,
      products,
      rates: {
        accepted: rate('http_requests_total', { ...seckill, status: '202' }),
        refused409: rate('http_requests_total', { ...seckill, status: '409' }),
        limited429: rate('http_requests_total', { ...seckill, status: '429' }),
        busy503: rate('http_requests_total', { ...seckill, status: '503' }),
        lockTimeouts: rate('seckill_purchases_total', { result: 'lock-timeout' }),
      },
      latency: { p50: quantile(delta, 0.5), p99: quantile(delta, 0.99) },
      queue: this.deps.queue
        ? await this.deps.queue.getJobCounts('waiting', 'active', 'delayed', 'failed')
        : {},
      outboxBacklog: products.reduce((a, p) => a + p.backlog, 0),
      persistedTotal: products.reduce(
        (a, p) => a + Object.values(p.orders).reduce((x, y) => x + y, 0),
        0,
      ),
    };
  }

  private async products(at: number) {
    const states = await readProductStates(this.deps, MAX_PRODUCTS);
    const ids = states.map((s) => s.productId);
    const out: Array<DashboardSnapshot['products'][number] & { backlog: number }> = [];
    const rows = ids.length
      ? await sql<{ product_id: string; epoch: number; status: string; units: string }>`
          select product_id, epoch, status, sum(quantity) as units from orders
          where product_id in (${sql.join(ids)}) group by product_id, epoch, status`.execute(
          this.deps.db,
        )
      : { rows: [] };
    for (const s of states) {
      const key = `${s.productId}:${s.epoch}`;
      if (s.remaining === 0 && !this.soldOutAt.has(key)) this.soldOutAt.set(key, at);
      const orders: Record<string, number> = {};
      for (const r of rows.rows) {
        if (r.product_id === s.productId && r.epoch === s.epoch) orders[r.status] = Number(r.units);
      }
      out.push({
        productId: s.productId,
        epoch: s.epoch,
        total: s.total,
        remaining: s.remaining,
        status: s.status,
        soldOutAt: this.soldOutAt.get(key) ?? null,
        segments: s.segments.map((g) => ({
          segment: g.segment,
          stock: g.stock,
          sold: g.sold,
          ...(g.shard && { shard: g.shard }),
        })),
        orders,
        backlog: s.segments.reduce((a, g) => a + g.pending, 0),
      });
    }
    return out;
  }
}
