/**
 * The per-shopper rate limit taken inside the purchase's home deduct: one bucket,
 * shared by every process, in the home segment's slot; one cell per purchase whatever path the
 * sale takes (a retry, the lock the free call found contended, a claim), none for a spill; a
 * refused cell changes nothing and never waits in a lock's line; limits off cost no command.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimit } from '../../src/config/index.js';
import type { Db } from '../../src/db/index.js';
import { readProductState, seedProduct } from '../../src/inventory/index.js';
import { countCommands } from '../../src/redis/command-count.js';
import { Keys } from '../../src/redis/keys.js';
import { startApp, type RunningApp } from '../support/app.js';
import { sleep } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';
import {
  orderSold,
  saleProcess,
  shopperOf,
  soloSaleProcess,
  testDb,
  totalCalls,
  type SaleProcess,
} from '../support/sale.js';

const ns = useNamespace();
const config = ns.config({ LOCK_WAIT_MS: '2000' });
const keys = new Keys(ns.id);
let db: Db;
let procs: SaleProcess[];
let apps: RunningApp[];

beforeAll(async () => {
  db = testDb(config);
  procs = Array.from({ length: 2 }, () => saleProcess(config));
  const env = { RATE_LIMIT_USER: '5/m', TRUST_PROXY: 'true' };
  apps = [await startApp(ns.config(env)), await startApp(ns.config(env))];
});
afterAll(async () => {
  await Promise.all([...procs.map((p) => p.close()), ...apps.map((a) => a.close())]);
  await db.destroy();
});

const deps = () => ({ redis: procs[0]!.redis, keys, db, catalogue: procs[0]!.inv.catalogue });
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
/** 5 a minute, bursts of 5: nothing refills during a test */
const fivePerMinute: RateLimit = { name: 'user', rate: 5, periodMs: 60_000, burst: 5 };
const soldOf = async (productId: string) =>
  (await readProductState({ redis: procs[0]!.redis, keys }, productId))!.sold;
const bucketOf = (productId: string, seg: number, userId: string) =>
  keys.shopperRateLimit('seckill', productId, seg, userId);

/** A product of 100 units in 4 segments, 100 a shopper: only the rate limit refuses. */
async function seeded(strategy: 'lockfree' | 'segmented') {
  const productId = newProduct();
  await seedProduct(deps(), productId, { total: 100, segments: 4, strategy, limitPerUser: 100 });
  return productId;
}

function buy(base: string, productId: string, user: string, key?: string) {
  return fetch(`${base}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': user,
      ...(key && { 'idempotency-key': key }),
    },
    body: JSON.stringify({ productId }),
  });
}

describe.each(['lockfree', 'segmented'] as const)(
  'a shopper bucket in the %s deduct',
  (strategy) => {
    it('20 purchases of one shopper at once over two API processes: exactly the burst of 5 sell', async () => {
      const productId = await seeded(strategy);
      const user = `u${randomBytes(4).toString('hex')}`;
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => buy(apps[i % 2]!.url, productId, user)),
      );
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([...Array(5).fill(202), ...Array(15).fill(429)]);
      expect(await soldOf(productId)).toBe(5);
      // each cell taken once: the five sales saw the bucket at 4, 3, 2, 1, 0 left
      const left = answers
        .filter((r) => r.status === 202)
        .map((r) => /^"user";r=(\d+);t=\d+$/.exec(r.headers.get('ratelimit') ?? '')?.[1])
        .sort();
      expect(left).toEqual(['0', '1', '2', '3', '4']);
      const refused = answers.find((r) => r.status === 429)!;
      expect(refused.headers.get('ratelimit-policy')).toBe('"user";q=5;w=60');
      expect(refused.headers.get('ratelimit')).toMatch(/^"user";r=0;t=\d+$/);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(((await refused.json()) as { type: string }).type).toBe(
        'urn:seckill:problem:rate-limited',
      );
    });

    it('a limited purchase is one script: the deduct takes the cell (no rateLimit script)', async () => {
      const productId = await seeded(strategy);
      const app = apps[0]!;
      // the view and touch loaded, the deduct in every master's script cache (a cluster's too)
      for (let seg = 0; seg < 4; seg++) {
        expect(
          (await buy(app.url, productId, shopperOf(seg, 4, `warm-${productId}-`))).status,
        ).toBe(202);
      }
      const count = countCommands(app.rt.redis);
      try {
        for (let i = 0; i < 3; i++) {
          expect((await buy(app.url, productId, `one-${i}-${productId}`)).status).toBe(202);
        }
        expect(Object.fromEntries(count.byName)).toEqual({ evalsha: 3 });
      } finally {
        count.stop();
      }
    });
  },
);

describe('the shopper bucket in the sale', () => {
  it('limits off cost no command; a limited home deduct costs its GET and SET, no TIME, no script', async () => {
    // a Redis of its own: the server's counts are this process's commands alone
    const solo = await soloSaleProcess(ns.config, { LOCK_WAIT_MS: '2000' });
    try {
      const productId = newProduct();
      const soloDeps = { redis: solo.redis, keys, db, catalogue: solo.inv.catalogue };
      await seedProduct(soloDeps, productId, { total: 100, segments: 4, strategy: 'lockfree' });
      const { sale } = solo.inv;
      await orderSold(sale.purchase({ productId, userId: 'warm', quantity: 1 }));
      // the least of five: a background touch of this process's own may land in one
      const cost = async (tag: string, limited: boolean) => {
        let least = Infinity;
        for (let i = 0; i < 5; i++) {
          const userId = shopperOf(1, 4, `${tag}${i}-`);
          const before = await totalCalls(solo.redis);
          await orderSold(
            sale.purchase({
              productId,
              userId,
              quantity: 1,
              rate: limited ? fivePerMinute : undefined,
            }),
          );
          least = Math.min(least, (await totalCalls(solo.redis)) - before);
        }
        return least;
      };
      // EVALSHA; HMGET state, TIME, EXISTS void, HGET claim, HGET marker, HSET state (stock and
      // sold), HSET marker, XADD
      expect(await cost('off', false)).toBe(LIMITS_OFF_COST);
      expect((await cost('on', true)) - LIMITS_OFF_COST).toBe(2);
    } finally {
      await solo.close();
    }
  });

  it('a refused cell changes nothing: no unit, no marker, no fence, no claim', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 40, segments: 4, strategy: 'segmented' });
    const userId = shopperOf(2, 4, 'full-');
    const seg = keys.segment(productId, 2);
    const fence = await procs[0]!.redis.get(seg.lock.fence);
    // the bucket spent: 5 cells taken 0 ms ago
    const tat = (Date.now() + 5 * 12_000) * 1_000;
    await procs[0]!.redis.set(bucketOf(productId, 2, userId), String(tat), 'PX', 70_000);
    const rate = fivePerMinute;
    const r = await procs[0]!.inv.sale.purchase({ productId, userId, quantity: 1, rate });
    expect(r.kind).toBe('rate-limited');
    expect(r.bucket).toMatchObject({ allowed: false, remaining: 0, taken: 0 });
    expect(r.bucket!.retryMs).toBeGreaterThan(0);
    expect(await soldOf(productId)).toBe(0);
    expect(await procs[0]!.redis.hexists(seg.buyers, userId)).toBe(0);
    expect(await procs[0]!.redis.hexists(seg.claims, userId)).toBe(0);
    expect(await procs[0]!.redis.get(seg.lock.fence)).toBe(fence);
  });

  it('the free call found the lock held: the cell is taken there, and the purchase under the lock takes none', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 8, segments: 4, strategy: 'segmented' });
    const userId = shopperOf(1, 4, 'held-');
    const holder = (await procs[1]!.inv.locks.acquire(keys.segmentLockName(productId, 1), {
      leaseMs: 10_000,
    }))!;
    const rate = fivePerMinute;
    const bought = procs[0]!.inv.sale.purchase({ productId, userId, quantity: 1, rate });
    // the scenario: time for a purchase past the line to show
    await sleep(150);
    expect(await soldOf(productId)).toBe(0); // waiting in the line, its cell taken
    expect(await procs[0]!.redis.exists(bucketOf(productId, 1, userId))).toBe(1);
    await holder.release();
    const r = await bought;
    expect(r.bucket).toMatchObject({ allowed: true, remaining: 4 });
    expect((await orderSold(Promise.resolve(r))).segment).toBe(1);
    expect(await soldOf(productId)).toBe(1);
    // one cell for the purchase (the free call's), none for the deduct under the lock
    const tat = Number(await procs[0]!.redis.get(bucketOf(productId, 1, userId)));
    const [sec, usec] = await procs[0]!.redis.time();
    const now = Number(sec) * 1_000_000 + Number(usec);
    expect(Math.round((tat - now) / 12_000_000)).toBe(1);
  });

  it("a shopper past their rate never joins a held lock's line: refused at once, from either process", async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 8, segments: 4, strategy: 'segmented' });
    const userId = shopperOf(3, 4, 'queue-');
    const name = keys.segmentLockName(productId, 3);
    const tat = (Date.now() + 5 * 12_000) * 1_000;
    await procs[0]!.redis.set(bucketOf(productId, 3, userId), String(tat), 'PX', 70_000);
    // held in the other process (the free call answers), then in this one (no free call is made)
    for (const holderProc of [procs[1]!, procs[0]!]) {
      const holder = (await holderProc.inv.locks.acquire(name, { leaseMs: 10_000 }))!;
      const started = Date.now();
      const rate = fivePerMinute;
      const r = await procs[0]!.inv.sale.purchase({ productId, userId, quantity: 1, rate });
      expect(r.kind).toBe('rate-limited');
      expect(Date.now() - started).toBeLessThan(1_500); // not the 2 s LOCK_WAIT_MS in the line
      expect(await procs[0]!.redis.exists(keys.segment(productId, 3).lock.queue)).toBe(0);
      await holder.release();
    }
    expect(await soldOf(productId)).toBe(0);
  });

  it('a spill takes no cell: the home claim took it', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 4, segments: 4, strategy: 'lockfree' });
    const userId = shopperOf(0, 4, 'spill-');
    await orderSold(
      procs[0]!.inv.sale.purchase({
        productId,
        userId: shopperOf(0, 4, 'first-'),
        quantity: 1,
      }),
    );
    const rate = fivePerMinute;
    const r = await procs[0]!.inv.sale.purchase({ productId, userId, quantity: 1, rate });
    const order = await orderSold(Promise.resolve(r));
    expect(order.segment).not.toBe(0);
    expect(r.bucket).toMatchObject({ allowed: true, remaining: 4 });
    expect(await procs[0]!.redis.exists(bucketOf(productId, order.segment, userId))).toBe(0);
  });

  it('a keyed purchase refused by the shopper bucket forgets its key: the retry after a refill runs', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, {
      total: 10,
      segments: 1,
      strategy: 'lockfree',
      limitPerUser: 10,
    });
    const userId = `k${randomBytes(4).toString('hex')}`;
    const tat = (Date.now() + 5 * 12_000) * 1_000;
    await procs[0]!.redis.set(bucketOf(productId, 0, userId), String(tat), 'PX', 70_000);
    const refused = await buy(apps[0]!.url, productId, userId, 'key-1');
    expect(refused.status).toBe(429);
    await procs[0]!.redis.del(bucketOf(productId, 0, userId)); // refilled
    const retry = await buy(apps[1]!.url, productId, userId, 'key-1');
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.headers.get('ratelimit')).toMatch(/^"user";r=4;t=\d+$/);
    expect(await soldOf(productId)).toBe(1);
  });
});

describe('the shopper bucket in a keyed purchase folded into its home deduct', () => {
  /** the server's calls of each command (every master) */
  async function callsByName(): Promise<Map<string, number>> {
    const redis = procs[0]!.redis;
    const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
    const calls = new Map<string, number>();
    for (const node of nodes) {
      for (const m of (await node.info('commandstats')).matchAll(
        /^cmdstat_([^:]+):calls=(\d+)/gm,
      )) {
        calls.set(m[1]!, (calls.get(m[1]!) ?? 0) + Number(m[2]));
      }
    }
    return calls;
  }
  const memberOf = (key: string) => createHash('sha256').update(key).digest('base64url');
  /** the bucket's theoretical arrival time ahead of Redis's clock, in cells of 12 s */
  async function cellsTaken(productId: string, seg: number, userId: string) {
    const tat = Number(await procs[0]!.redis.get(bucketOf(productId, seg, userId)));
    const [sec, usec] = await procs[0]!.redis.time();
    return Math.round((tat - (Number(sec) * 1_000_000 + Number(usec))) / 12_000_000);
  }

  it('a keyed, limited purchase from home is one EVALSHA that takes one cell (its MGET with the record, and SET, inside)', async () => {
    const productId = await seeded('lockfree');
    const app = apps[0]!;
    for (let seg = 0; seg < 4; seg++) {
      const warm = shopperOf(seg, 4, `kwarm-${productId}-`);
      expect((await buy(app.url, productId, warm, 'w')).status).toBe(202); // scripts loaded
    }
    const count = countCommands(app.rt.redis);
    try {
      for (let i = 0; i < 3; i++) {
        const userId = shopperOf(1, 4, `kone-${i}-${productId}-`);
        const r = await buy(app.url, productId, userId, `k${i}`);
        expect(r.status).toBe(202);
        expect(r.headers.get('ratelimit')).toMatch(/^"user";r=4;t=\d+$/);
        expect(await cellsTaken(productId, 1, userId)).toBe(1);
        // the record written, outside the shopper's index (a sale's record: lua/includes/keyedRecord.lua)
        const records = keys.idempotency(productId, 1, userId);
        expect(await procs[0]!.redis.exists(records.record(memberOf(`k${i}`)))).toBe(1);
        expect(await procs[0]!.redis.exists(records.all)).toBe(0);
      }
      expect(Object.fromEntries(count.byName)).toEqual({ evalsha: 3 });
    } finally {
      count.stop();
    }
    // inside the call: one MGET of the record and the bucket, their two SETs, one TIME, and no
    // index (the least of fifteen: other files' commands on a shared server only ever add)
    const least = new Map<string, number>();
    for (let i = 0; i < 15; i++) {
      const userId = shopperOf(2, 4, `kin-${i}-${productId}-`);
      const before = await callsByName();
      expect((await buy(app.url, productId, userId, `k${i}`)).status).toBe(202);
      const after = await callsByName();
      for (const name of ['mget', 'get', 'set', 'time', 'zcard', 'zadd', 'evalsha']) {
        const d = (after.get(name) ?? 0) - (before.get(name) ?? 0);
        least.set(name, Math.min(least.get(name) ?? Infinity, d));
      }
    }
    expect(Object.fromEntries(least)).toEqual({
      mget: 1,
      get: 0,
      set: 2,
      time: 1,
      zcard: 0,
      zadd: 0,
      evalsha: 1,
    });
  });

  it('a spill claim at the records cap: the fold answers full with the cell it took; the usual claim makes room and sells, one cell in all', async () => {
    // 3 units in 4 segments: segment 3, this shopper's home, is empty
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 3, segments: 4, strategy: 'lockfree' });
    const app = apps[0]!;
    const userId = shopperOf(3, 4, `kfull-${productId}-`);
    const { all, refusals } = keys.idempotency(productId, 3, userId);
    const cap = app.rt.config.sale.idempotencyMaxPerUser;
    const expires = Date.now() + 600_000;
    const members = Array.from({ length: cap }, (_, i) => [expires + i, `old-${i}`]).flat();
    await procs[0]!.redis.zadd(all, ...members);
    await procs[0]!.redis.zadd(refusals, ...members);
    const r = await buy(app.url, productId, userId, 'k-full');
    expect(r.status).toBe(202);
    expect(r.headers.get('ratelimit')).toMatch(/^"user";r=4;t=\d+$/);
    expect(await cellsTaken(productId, 3, userId)).toBe(1);
    // the oldest refusal made room for the running claim, kept once it sold
    expect(await procs[0]!.redis.zcard(all)).toBe(cap);
    expect(await procs[0]!.redis.zscore(all, 'old-0')).toBeNull();
    expect(await procs[0]!.redis.zscore(all, memberOf('k-full'))).not.toBeNull();
    expect(await soldOf(productId)).toBe(1);
  });

  it('refused by the bucket in the folded call: a 429 as without a key, no record, nothing sold, no second call', async () => {
    const productId = await seeded('lockfree');
    const app = apps[0]!;
    const userId = shopperOf(3, 4, `krefused-${productId}-`);
    expect((await buy(app.url, productId, shopperOf(3, 4, `kw-${productId}-`), 'w')).status).toBe(
      202,
    );
    const tat = (Date.now() + 5 * 12_000) * 1_000; // the bucket spent
    await procs[0]!.redis.set(bucketOf(productId, 3, userId), String(tat), 'PX', 70_000);
    const count = countCommands(app.rt.redis);
    let refused: Response;
    try {
      refused = await buy(app.url, productId, userId, 'k-refused');
      expect(Object.fromEntries(count.byName)).toEqual({ evalsha: 1 });
    } finally {
      count.stop();
    }
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"user";q=5;w=60');
    expect(refused.headers.get('ratelimit')).toMatch(/^"user";r=0;t=\d+$/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { type: string }).type).toBe(
      'urn:seckill:problem:rate-limited',
    );
    const records = keys.idempotency(productId, 3, userId);
    expect(await procs[0]!.redis.exists(records.record(memberOf('k-refused')))).toBe(0);
    expect(await procs[0]!.redis.zcard(records.all)).toBe(0);
    expect(await soldOf(productId)).toBe(1); // the warm-up's
    expect(await procs[0]!.redis.hexists(keys.segment(productId, 3).buyers, userId)).toBe(0);
  });

  it('the folded call found the lock held: its cell is taken there; the key claimed the usual way, its claim and spill take none', async () => {
    const productId = await seeded('segmented');
    const app = apps[0]!;
    const userId = shopperOf(1, 4, `kheld-${productId}-`);
    const holder = (await procs[1]!.inv.locks.acquire(keys.segmentLockName(productId, 1), {
      leaseMs: 10_000,
    }))!;
    // the lock's wait runs out (the app's LOCK_WAIT_MS): a claim at home, the unit from a spill
    const r = await buy(app.url, productId, userId, 'k-held');
    await holder.release();
    expect(r.status).toBe(202);
    expect(r.headers.get('ratelimit')).toMatch(/^"user";r=4;t=\d+$/);
    expect(await soldOf(productId)).toBe(1);
    expect(await cellsTaken(productId, 1, userId)).toBe(1);
  });
});

/**
 * A lock-free purchase's commands in Redis, limits off: 10 before the state's write was one HSET
 * (stock and sold were two HINCRBY).
 */
const LIMITS_OFF_COST = 9;
