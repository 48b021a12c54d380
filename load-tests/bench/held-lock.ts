/**
 * The bench's held-lock baseline: a sale wrapped in this project's own lock the way the Redisson
 * tutorials wrap one, the application holding it the full way. Acquire, read the stock, write
 * it, release: each its own round trip, never the sale's in-script free path
 * (lua/deductFree-11.lua). `global` is one segment behind one lock; `segmented` N segments, each
 * behind its own, a shopper's purchase going to one of them. Nothing of the product's sale runs
 * here (no buyer marker, no outbox, no order row), so a row of it costs less than a sale of the
 * product: what it measures is how long its lock is held.
 *
 * And the restocker of `npm run bench`'s "+ restocks" rows: something that holds one of a real
 * product's segment locks the full way now and then (a restock's shape: the lock, a read, a
 * write, the release), while the product's sale runs through it.
 */
import { LockClient } from '../../src/lock/index.js';
import { sendNow, type Redis } from '../../src/redis/connection.js';
import type { Keys } from '../../src/redis/keys.js';
import { homeSegment, splitStock } from '../../src/inventory/layout.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';

/** How long a held purchase waits: in this process's line, then in Redis (the sale's defaults). */
export interface HeldWaits {
  queueMs: number;
  waitMs: number;
  leaseMs: number;
}

export const HELD_WAITS: HeldWaits = { queueMs: 1_000, waitMs: 100, leaseMs: 2_000 };

export type HeldOutcome = 'sold' | 'sold-out' | 'busy';

export interface HeldReconcile {
  ok: boolean;
  total: number;
  remaining: number;
  /** units sold (the baseline has no orders: sold is what the segments count) */
  persisted: number;
  persistedOrders: number;
  pending: 0;
  problems: string[];
}

export class HeldLockShop {
  /** segment count of each product seeded here (the seed writes it to Redis too) */
  private readonly segments = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly locks: LockClient,
    private readonly keys: Keys,
    private readonly waits: HeldWaits = HELD_WAITS,
  ) {}

  private lockName(productId: string, seg: number): string {
    return `held-${this.keys.segmentLockName(productId, seg)}`;
  }

  /** The segment's stock hash, in its lock's slot. */
  private stockKey(productId: string, seg: number): string {
    return `${this.keys.prefix}:{${this.lockName(productId, seg)}}:stock`;
  }

  private countKey(productId: string): string {
    return `${this.keys.prefix}:held:${productId}:segments`;
  }

  async seed(productId: string, segments: number, total: number): Promise<void> {
    const units = splitStock(total, segments);
    for (let seg = 0; seg < segments; seg++) {
      const key = this.stockKey(productId, seg);
      await this.redis.hset(key, 'stock', units[seg]!, 'sold', 0, 'total', units[seg]!);
    }
    await this.redis.set(this.countKey(productId), segments);
    this.segments.set(productId, segments);
  }

  private async segmentCount(productId: string): Promise<number | undefined> {
    const known = this.segments.get(productId);
    if (known) return known;
    const n = Number(await this.redis.get(this.countKey(productId)));
    if (!n) return undefined;
    this.segments.set(productId, n);
    return n;
  }

  /** One purchase of one unit from the shopper's home segment, under its lock held the full way. */
  async buy(productId: string, userId: string): Promise<HeldOutcome | 'unknown'> {
    const segments = await this.segmentCount(productId);
    if (!segments) return 'unknown';
    const seg = homeSegment(userId, segments);
    const held = await this.locks.acquire(this.lockName(productId, seg), this.waits);
    if (!held) return 'busy';
    const key = this.stockKey(productId, seg);
    try {
      // sent at once, not with the turn's batch: the lock is held until each reply is back
      const [stock, sold] = (await sendNow(() => this.redis.hmget(key, 'stock', 'sold'))).map(
        Number,
      ) as [number, number];
      if (stock <= 0) return 'sold-out';
      await sendNow(() => this.redis.hset(key, 'stock', stock - 1, 'sold', sold + 1));
      return 'sold';
    } finally {
      await held.release();
    }
  }

  /** Every segment's stock + sold = its seeded units; sold is what the sales counted. */
  async reconcile(productId: string): Promise<HeldReconcile | undefined> {
    const segments = await this.segmentCount(productId);
    if (!segments) return undefined;
    const out: HeldReconcile = {
      ok: true,
      total: 0,
      remaining: 0,
      persisted: 0,
      persistedOrders: 0,
      pending: 0,
      problems: [],
    };
    for (let seg = 0; seg < segments; seg++) {
      const [stock, sold, total] = (
        await this.redis.hmget(this.stockKey(productId, seg), 'stock', 'sold', 'total')
      ).map(Number) as [number, number, number];
      out.total += total;
      out.remaining += stock;
      out.persisted += sold;
      if (stock < 0 || stock + sold !== total) {
        out.ok = false;
        out.problems.push(`segment ${seg}: stock ${stock} + sold ${sold} != ${total}`);
      }
    }
    out.persistedOrders = out.persisted;
    return out;
  }
}

/**
 * Takes random segment locks of a product of the real sale at `perSecond`, each held the full
 * way: acquire, read the segment's state, write a key of its own in the segment's slot (not the
 * stock: the sale's accounting stays exact), release. Stops when `signal` aborts.
 * @returns how many holds it made.
 */
export async function restockThrough(
  redis: Redis,
  locks: LockClient,
  keys: Keys,
  product: { id: string; segments: number },
  perSecond: number,
  signal: AbortSignal,
): Promise<number> {
  let holds = 0;
  const gapMs = 1000 / perSecond;
  let next = performance.now();
  while (!signal.aborted) {
    const seg = Math.floor(Math.random() * product.segments);
    const segment = keys.segment(product.id, seg);
    const held = await locks.acquire(keys.segmentLockName(product.id, seg), {
      waitMs: 1_000,
      leaseMs: 2_000,
    });
    if (held) {
      try {
        await sendNow(() => redis.hget(segment.state, STATE_FIELD.stock));
        await sendNow(() => redis.hincrby(`${segment.state}:bench-restocks`, 'holds', 1));
        holds++;
      } finally {
        await held.release();
      }
    }
    next += gapMs;
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    else next = performance.now();
  }
  return holds;
}
