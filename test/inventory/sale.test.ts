import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.js';
import type { Strategy } from '../../src/db/schema.js';
import { readProductState, SaleError, seedProduct } from '../../src/inventory/index.js';
import { homeSegment } from '../../src/inventory/layout.js';
import { deduct } from '../../src/inventory/sale/protocol.js';
import { Keys } from '../../src/redis/keys.js';
import { barrier, sleep } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';
import { orderSold, saleProcess, testDb, totalCalls, type SaleProcess } from '../support/sale.js';
import { startTestRedis } from '../support/servers.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { decodeMeta, isSoldOut } from '../../src/inventory/records/product-meta.js';
import { waitFor, deadlineOf } from '../support/cli.js';

const ns = useNamespace();
const config = ns.config({ LOCK_WAIT_MS: '200' });
const keys = new Keys(ns.id);
let db: Db;
let procs: SaleProcess[];

beforeAll(() => {
  db = testDb(config);
  // Four API processes, each with its own connections, subscriber and lock client.
  procs = Array.from({ length: 4 }, () => saleProcess(config));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.close()));
  await db.destroy();
});

const deps = () => ({ redis: procs[0]!.redis, keys, db, catalogue: procs[0]!.inv.catalogue });
const newProduct = () => `p${randomBytes(4).toString('hex')}`;

type Outcome = 'accepted' | SaleError['code'];

/** One shopper: retries a busy answer (503) as a client honouring Retry-After would. */
async function buy(p: SaleProcess, productId: string, userId: string, quantity = 1) {
  const overdue = deadlineOf(`a final answer for ${userId}`, 50_000);
  for (;;) {
    overdue();
    try {
      await orderSold(p.inv.sale.purchase({ productId, userId, quantity }));
      return 'accepted' as Outcome;
    } catch (err) {
      if (!(err instanceof SaleError)) throw err;
      if (err.code !== 'lock-timeout' && err.code !== 'purchase-in-progress') return err.code;
      await sleep(5);
    }
  }
}

/** Redis-side facts of a product: stock left, units sold, outbox entries, buyer markers. */
async function facts(productId: string) {
  const state = (await readProductState({ redis: procs[0]!.redis, keys }, productId))!;
  let markers = 0;
  let claims = 0;
  for (const s of state.segments) {
    const k = keys.segment(productId, s.segment);
    markers += await procs[0]!.redis.hlen(k.buyers);
    claims += await procs[0]!.redis.hlen(k.claims);
  }
  return {
    remaining: state.remaining,
    sold: state.sold,
    outbox: state.segments.reduce((a, s) => a + s.pending, 0),
    markers,
    claims,
  };
}

async function race(productId: string, buyers: number) {
  const ready = barrier(buyers);
  let inFlight = 0;
  let maxInFlight = 0;
  const outcomes = await Promise.all(
    Array.from({ length: buyers }, async (_, i) => {
      await ready();
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        return await buy(procs[i % procs.length]!, productId, `u${i}`);
      } finally {
        inFlight--;
      }
    }),
  );
  const count = (o: Outcome) => outcomes.filter((x) => x === o).length;
  return { outcomes, count, maxInFlight };
}

describe('the oversell race', () => {
  it('a naive check-then-set deduct oversells 10 units under 200 concurrent buyers', async () => {
    const key = `${ns.id}:naive:stock`;
    const redis = procs[0]!.redis;
    await redis.set(key, 10);
    const ready = barrier(200);
    let sold = 0;
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const r = procs[i % procs.length]!.redis;
        await ready();
        const stock = Number(await r.get(key));
        if (stock <= 0) return;
        await sleep(1); // the scenario: a window between the read and the write
        await r.set(key, stock - 1);
        sold++;
      }),
    );
    expect(sold).toBeGreaterThan(10);
  });

  const cases: Array<{ strategy: Strategy; segments: number; total: number }> = [
    { strategy: 'global', segments: 1, total: 10 },
    { strategy: 'segmented', segments: 4, total: 10 },
    { strategy: 'segmented', segments: 16, total: 10 },
    { strategy: 'lockfree', segments: 4, total: 10 },
    { strategy: 'lockfree', segments: 16, total: 10 },
  ];
  for (const c of cases) {
    it(`${c.strategy} with ${c.segments} segment(s) sells exactly ${c.total} to 200 concurrent buyers`, async () => {
      const productId = newProduct();
      await seedProduct(deps(), productId, c);
      const { count, maxInFlight } = await race(productId, 200);
      expect(maxInFlight).toBeGreaterThan(100);
      expect(count('accepted')).toBe(10);
      expect(count('sold-out')).toBe(190);
      expect(await facts(productId)).toEqual({
        remaining: 0,
        sold: 10,
        outbox: 10,
        markers: 10,
        claims: 0,
      });
    });
  }
});

describe('per-user limit', () => {
  it('50 parallel purchases by one shopper sell exactly limitPerUser', async () => {
    for (const strategy of ['segmented', 'lockfree'] as const) {
      const productId = newProduct();
      await seedProduct(deps(), productId, {
        total: 100,
        segments: 4,
        strategy,
        limitPerUser: 2,
      });
      const ready = barrier(50);
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          await ready();
          return buy(procs[i % procs.length]!, productId, 'same-user');
        }),
      );
      expect(outcomes.filter((o) => o === 'accepted').length).toBe(2);
      expect(outcomes.filter((o) => o === 'limit-reached').length).toBe(48);
      const f = await facts(productId);
      expect(f.sold).toBe(2);
      expect(f.remaining).toBe(98);
    }
  });

  it('a limit-reached refusal names the earlier order', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 5, segments: 2, strategy: 'lockfree' });
    const first = await orderSold(
      procs[0]!.inv.sale.purchase({ productId, userId: 'x', quantity: 1 }),
    );
    const again = await orderSold(
      procs[1]!.inv.sale.purchase({ productId, userId: 'x', quantity: 1 }),
    ).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(SaleError);
    expect((again as SaleError).code).toBe('limit-reached');
    expect((again as SaleError).orderId).toBe(first.orderId);
  });
});

describe('an empty script cache', () => {
  it('a purchase on a server that lost its scripts (a promoted replica) deducts exactly once', async () => {
    for (const strategy of ['segmented', 'lockfree'] as const) {
      const productId = newProduct();
      await seedProduct(deps(), productId, { total: 4, segments: 2, strategy });
      expect(await buy(procs[0]!, productId, 'c1')).toBe('accepted');
      const redis = procs[0]!.redis;
      const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
      for (const n of nodes) await n.script('FLUSH');
      // the plain EVALSHA answers NOSCRIPT (the script did not run) and the call is sent again
      expect(await buy(procs[0]!, productId, 'c2')).toBe('accepted');
      expect(await buy(procs[1]!, productId, 'c3')).toBe('accepted');
      expect(await facts(productId)).toEqual({
        remaining: 1,
        sold: 3,
        outbox: 3,
        markers: 3,
        claims: 0,
      });
    }
  });
});

describe('home segment and spill', () => {
  it('sells the whole stock even when every buyer has the same home segment', async () => {
    for (const strategy of ['segmented', 'lockfree'] as const) {
      const productId = newProduct();
      await seedProduct(deps(), productId, { total: 16, segments: 16, strategy });
      const users: string[] = [];
      for (let i = 0; users.length < 60; i++)
        if (homeSegment(`h${i}`, 16) === 3) users.push(`h${i}`);
      const outcomes = await Promise.all(
        users.map((u, i) => buy(procs[i % procs.length]!, productId, u)),
      );
      expect(outcomes.filter((o) => o === 'accepted').length).toBe(16);
      expect(outcomes.filter((o) => o === 'sold-out').length).toBe(44);
      const f = await facts(productId);
      expect(f).toEqual({ remaining: 0, sold: 16, outbox: 16, markers: 16, claims: 0 });
      // every marker sits at the home segment, whichever segment sold the unit
      const homeMarkers = await procs[0]!.redis.hlen(keys.segment(productId, 3).buyers);
      expect(homeMarkers).toBe(16);
    }
  });

  it('a spill purchase still counts against the limit', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 3, segments: 3, strategy: 'lockfree' });
    let user = 'a0';
    for (let i = 0; homeSegment(user, 3) !== 0; i++) user = `a${i}`;
    // empty the home segment first
    await procs[0]!.redis.hset(keys.segment(productId, 0).state, STATE_FIELD.stock, 0);
    const p = await orderSold(
      procs[0]!.inv.sale.purchase({ productId, userId: user, quantity: 1 }),
    );
    expect(p.segment).not.toBe(0);
    expect(p.homeSegment).toBe(0);
    expect(await buy(procs[1]!, productId, user)).toBe('limit-reached');
  });
});

describe('fencing', () => {
  /** A one-unit deduct in segment 0, the home segment, at epoch 1 (fence, user, order added). */
  const homeDeductArgs = (productId: string) => ({
    mode: 'home' as const,
    epoch: 1,
    quantity: 1,
    productId,
    segment: 0,
    homeSegment: 0,
    touchedAt: Date.now(), // the seed touched the product just now
  });

  it('the deduct refuses a token older than the last one it accepted, and changes nothing', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 10, segments: 1, strategy: 'global' });
    const redis = procs[0]!.redis;
    const seg = keys.segment(productId, 0);
    const base = homeDeductArgs(productId);
    const ok = await deduct(redis, seg, { ...base, fence: 7, userId: 'a', orderId: 'o1' });
    expect(ok.code).toBe('ok');
    const before = await facts(productId);
    const stale = await deduct(redis, seg, { ...base, fence: 6, userId: 'b', orderId: 'o2' });
    expect(stale).toEqual({ code: 'stale-fence', lastFence: 7 });
    expect(await facts(productId)).toEqual(before);
    expect(await redis.hexists(seg.buyers, 'b')).toBe(0);
  });

  it('a holder whose lease ran out cannot deduct after the next holder did', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 10, segments: 1, strategy: 'global' });
    const locks = procs[0]!.inv.locks;
    const name = keys.segmentLockName(productId, 0);
    const a = (await locks.acquire(name, { leaseMs: 50 }))!;
    // the scenario: a's lease runs out unreleased; b waits for it if the machine is slow
    await sleep(80);
    const b = (await locks.acquire(name, { leaseMs: 5_000, waitMs: 5_000 }))!;
    expect(b.fence).toBeGreaterThan(a.fence);
    const seg = keys.segment(productId, 0);
    const base = homeDeductArgs(productId);
    expect(
      (await deduct(procs[0]!.redis, seg, { ...base, fence: b.fence, userId: 'b', orderId: 'ob' }))
        .code,
    ).toBe('ok');
    expect(
      (await deduct(procs[0]!.redis, seg, { ...base, fence: a.fence, userId: 'a', orderId: 'oa' }))
        .code,
    ).toBe('stale-fence');
    await b.release();
    expect((await facts(productId)).sold).toBe(1);
  });
});

describe('sold out', () => {
  it('after sold out, purchases in every process issue zero Redis commands', async () => {
    // A dedicated server: other files' traffic must not count.
    const server = await startTestRedis();
    const own = ns.config({ REDIS_URL: server.url });
    const ps = [saleProcess(own), saleProcess(own)];
    try {
      const productId = newProduct();
      await seedProduct(
        { redis: ps[0]!.redis, keys, db, catalogue: ps[0]!.inv.catalogue },
        productId,
        {
          total: 8,
          segments: 4,
          strategy: 'segmented',
        },
      );
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) => buy(ps[i % 2]!, productId, `s${i}`)),
      );
      expect(outcomes.filter((o) => o === 'accepted').length).toBe(8);
      await waitFor(
        'both processes to hear of the sellout',
        async () => ps.every((p) => p.inv.sale.refusalFromMemory(productId)?.code === 'sold-out'),
        10_000,
        20,
      );
      const before = await totalCalls(ps[0]!.redis);
      const after50 = await Promise.all(
        Array.from({ length: 50 }, (_, i) => buy(ps[i % 2]!, productId, `late${i}`)),
      );
      const after = await totalCalls(ps[0]!.redis);
      expect(after50.every((o) => o === 'sold-out')).toBe(true);
      expect(after - before).toBe(0);
    } finally {
      await Promise.all(ps.map((p) => p.close()));
      await server.stop();
    }
  });

  it('a process started after the sellout knows it from the product meta', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 2, segments: 2, strategy: 'lockfree' });
    await Promise.all(Array.from({ length: 6 }, (_, i) => buy(procs[0]!, productId, `m${i}`)));
    await waitFor(
      'the product meta marked sold out',
      async () => {
        const meta = decodeMeta(await procs[0]!.redis.hgetall(keys.product(productId).meta));
        return meta !== null && isSoldOut(meta);
      },
      10_000,
      20,
    );
    const late = saleProcess(config);
    try {
      const view = await late.inv.catalogue.get(productId);
      expect(view?.soldOut).toBe(true);
    } finally {
      await late.close();
    }
  });
});

describe('outside the sale window, from memory', () => {
  it('ended and not started beyond doubt: refused by every process with zero Redis commands', async () => {
    const server = await startTestRedis();
    const own = ns.config({ REDIS_URL: server.url });
    const ps = [saleProcess(own), saleProcess(own)];
    try {
      const d = { redis: ps[0]!.redis, keys, db, catalogue: ps[0]!.inv.catalogue };
      const ended = newProduct();
      const early = newProduct();
      const live = newProduct();
      const base = { total: 5, segments: 2, strategy: 'segmented' as const };
      await seedProduct(d, ended, { ...base, endsAt: new Date(Date.now() - 10_000) });
      await seedProduct(d, early, { ...base, startsAt: new Date(Date.now() + 600_000) });
      await seedProduct(d, live, { ...base, endsAt: new Date(Date.now() + 600_000) });
      for (const p of ps) {
        expect(await buy(p, ended, 'w1')).toBe('ended');
        expect(await buy(p, early, 'w1')).toBe('not-started');
        // what the purchase service waits for first: the views, a sample of Redis's clock
        for (const id of [ended, early, live]) await p.inv.sale.guard.learn(id);
        expect(p.inv.sale.guard.learn(live)).toBeUndefined(); // nothing more to learn
      }
      let last = -1;
      await waitFor(
        "the learning's Redis calls to settle",
        async () => last === (last = await totalCalls(ps[0]!.redis)),
        10_000,
        50,
      );
      const before = await totalCalls(ps[0]!.redis);
      const refusals = ps.flatMap((p) =>
        Array.from({ length: 20 }, () => [
          p.inv.sale.refusalFromMemory(ended)?.code,
          p.inv.sale.refusalFromMemory(early)?.code,
          p.inv.sale.refusalFromMemory(live)?.code,
        ]),
      );
      expect(await totalCalls(ps[0]!.redis)).toBe(before);
      expect(refusals).toEqual(
        Array.from({ length: 40 }, () => ['ended', 'not-started', undefined]),
      );
      // the same refusal the deduct gives
      const fromRedis = await orderSold(
        ps[0]!.inv.sale.purchase({ productId: ended, userId: 'w2', quantity: 1 }),
      ).catch((e: unknown) => e as SaleError);
      const fromMemory = ps[0]!.inv.sale.refusalFromMemory(ended)!;
      expect({ code: fromMemory.code, message: fromMemory.message, at: fromMemory.at }).toEqual({
        code: (fromRedis as SaleError).code,
        message: (fromRedis as SaleError).message,
        at: (fromRedis as SaleError).at,
      });
      const sold = async (id: string) =>
        (await readProductState({ redis: ps[0]!.redis, keys }, id))!.sold;
      expect((await sold(ended)) + (await sold(early))).toBe(0);
    } finally {
      await Promise.all(ps.map((p) => p.close()));
      await server.stop();
    }
  });
});

describe('reseeding', () => {
  it('is refused while the sale is live, and with force clears every process cache', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 2, segments: 2, strategy: 'segmented' });
    await Promise.all(Array.from({ length: 8 }, (_, i) => buy(procs[i % 4]!, productId, `r${i}`)));
    await waitFor(
      'every process to hear of the sellout',
      async () => procs.every((p) => p.inv.sale.refusalFromMemory(productId)?.code === 'sold-out'),
      10_000,
      20,
    );
    for (const p of procs) await buy(p, productId, 'warm'); // every process now knows "sold out"
    // sold out is not live: a reseed is allowed without force
    await seedProduct(deps(), productId, { total: 4, segments: 2, strategy: 'segmented' });
    const refused = await seedProduct(deps(), productId, {
      total: 4,
      segments: 2,
      strategy: 'segmented',
    }).catch((e: unknown) => e);
    expect((refused as SaleError).code).toBe('sale-live');
    const forced = await seedProduct(
      deps(),
      productId,
      { total: 4, segments: 2, strategy: 'segmented' },
      { force: true },
    );
    expect(forced.epoch).toBe(3);
    await waitFor(
      'the reseed notice to clear every process cache',
      async () => procs.every((p) => p.inv.sale.refusalFromMemory(productId) === undefined),
      10_000,
      20,
    );
    // every process sells again (their sold-out caches were cleared by the reseed notice)
    const outcomes = await Promise.all(procs.map((p, i) => buy(p, productId, `after${i}`)));
    expect(outcomes).toEqual(['accepted', 'accepted', 'accepted', 'accepted']);
    const row = await db
      .selectFrom('products')
      .selectAll()
      .where('id', '=', productId)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ total: 4, segments: 2, epoch: 3 });
  });

  it('refuses purchases before the window opens and after it closes', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, {
      total: 5,
      segments: 1,
      strategy: 'lockfree',
      startsAt: new Date(Date.now() + 60_000),
    });
    expect(await buy(procs[0]!, productId, 'early')).toBe('not-started');
    await seedProduct(deps(), productId, {
      total: 5,
      segments: 1,
      strategy: 'lockfree',
      endsAt: new Date(Date.now() - 1_000),
    });
    expect(await buy(procs[0]!, productId, 'late')).toBe('ended');
    expect((await facts(productId)).sold).toBe(0);
  });
});
