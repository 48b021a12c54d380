/**
 * The cost of an order lookup and of a sweep follows the sales under way, not the catalogue:
 * order ids carry their product's catalogue number, and the sweeper walks only the active set,
 * which quiet sales leave (archived: still readable and reconcilable). Costs are counted in
 * commands (exact), never timed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OrderStore,
  ID_EPOCH_MS,
  mintOrderId,
  orderProductNumber,
  PendingOrderStore,
  readMeta,
  readProductState,
  readProductStates,
  seedProduct,
} from '../../src/inventory/index.js';
import { TOUCH_LEASE_MS } from '../../src/inventory/activity-timing.js';
import { deduct } from '../../src/inventory/protocol.js';
import { findOrder, OrdersRepository, sweep } from '../../src/orders/index.js';
import { countCommands, type CommandCount } from '../../src/redis/command-count.js';
import { createRedisClient, type RedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { OrderLookup } from '../../src/services/index.js';
import { useNamespace } from '../support/namespace.js';
import { stackProcess, type StackProcess } from '../support/orders.js';
import { orderSold, saleProcess } from '../support/sale.js';

const ns = useNamespace();
const config = ns.config();
const keys = new Keys(ns.id);
let s: StackProcess;
/** the connection whose commands are counted */
let probe: RedisClient;
let count: CommandCount;
let lookup: OrderLookup;

beforeAll(async () => {
  s = await stackProcess(config);
  probe = createRedisClient(config.redis, { name: 'test-catalogue-probe' });
  count = countCommands(probe);
  lookup = new OrderLookup({
    pending: new PendingOrderStore(probe, keys),
    rows: { findOrder: (orderId) => findOrder(s.rt.db, orderId), salePrice: async () => undefined },
  });
});
afterAll(async () => {
  probe.disconnect();
  await s.close();
});

const deps = () => ({ redis: s.rt.redis, keys, db: s.rt.db, catalogue: s.rt.inventory.catalogue });
let n = 0;
const newProduct = () => `cat${++n}${ns.id}`;

/** Redis commands `fn` sends through the probe connection. */
async function cost(fn: () => Promise<unknown>): Promise<number> {
  count.reset();
  await fn();
  return count.total();
}

const sweepOnce = () =>
  sweep({
    store: new OrderStore(probe, keys),
    rows: new OrdersRepository(s.rt.db),
    queue: s.queue,
    // nothing is old enough to re-enqueue: these tests are about which products are read
    minAgeMs: 600_000,
    claimTtlMs: 600_000,
    batchSize: 100,
  });

/** Puts each product's time in the active set far in the past (as if its quiet period ran out). */
async function timeRunsOut(productIds: string[]) {
  for (const id of productIds) await s.rt.redis.zadd(keys.active(), 'XX', 1, id);
}

const activeScore = (productId: string) => s.rt.redis.zscore(keys.active(), productId);

/** Seeds `count` products, lets their time run out and sweeps them into the archive. */
async function growArchive(howMany: number): Promise<string[]> {
  const ids = Array.from({ length: howMany }, newProduct);
  for (const id of ids)
    await seedProduct(deps(), id, { total: 5, segments: 2, strategy: 'lockfree' });
  await timeRunsOut(ids);
  const report = await sweepOnce();
  expect(report.archived).toBeGreaterThanOrEqual(howMany);
  for (const id of ids) expect(await activeScore(id)).toBeNull();
  return ids;
}

describe('order ids', () => {
  const V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('carry their catalogue number and the second they were minted in a version-8 UUID, the rest random', () => {
    const at = ID_EPOCH_MS + 123_456_789_000;
    for (const number of [1, 0xabc, 0xffff_ffff]) {
      const ids = Array.from({ length: 1_000 }, () => mintOrderId(number, at));
      for (const id of ids) {
        expect(id).toMatch(V8);
        expect(orderProductNumber(id)).toBe(number);
        expect(id.slice(0, 8)).toBe(number.toString(16).padStart(8, '0'));
        // the second, around the version nibble
        expect(parseInt(id.slice(9, 13) + id.slice(15, 18), 16)).toBe(123_456_789);
      }
      expect(new Set(ids).size).toBe(1_000);
      // every random hex digit takes many values over 1 000 ids (none is stuck)
      for (const digit of [20, 21, 25, 35])
        expect(new Set(ids.map((id) => id[digit])).size).toBeGreaterThan(8);
    }
  });

  it("ascend with time within a product: an id minted a second later sorts after (PostgreSQL's uuid order)", () => {
    const at = Date.now();
    const ids = Array.from({ length: 50 }, (_, i) => mintOrderId(7, at + i * 1_000));
    // every hex digit in order: the string order is the uuid's byte order
    expect([...ids].sort()).toEqual(ids);
    // the seconds wrap after 2^28 (8.5 years): the id stays a valid one of the product
    const wrapped = mintOrderId(7, ID_EPOCH_MS + 2 ** 28 * 1_000 + 5_000);
    expect(parseInt(wrapped.slice(9, 13) + wrapped.slice(15, 18), 16)).toBe(5);
    expect(orderProductNumber(wrapped)).toBe(7);
    // before the epoch too
    expect(mintOrderId(7, ID_EPOCH_MS - 1_000)).toMatch(V8);
  });

  it('are plain v4 UUIDs, carrying nothing, when no number is known', () => {
    for (const number of [0, -1, 1.5, 0x1_0000_0000]) {
      const id = mintOrderId(number);
      expect(id).toMatch(V4);
      expect(orderProductNumber(id)).toBeUndefined();
    }
  });
});

describe('order lookups', () => {
  it('find an order from its id at a cost that does not grow with the catalogue', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 100, segments: 4, strategy: 'lockfree' });
    const meta = (await readMeta(deps(), productId))!;
    expect(meta.number).toBeGreaterThan(0);
    const sale = s.rt.inventory.sale;
    // sold, not persisted (no worker here): only in an outbox
    const sold = await orderSold(sale.purchase({ productId, userId: 'u1', quantity: 1 }));
    expect(orderProductNumber(sold.orderId)).toBe(meta.number);
    // an order id of the format before catalogue numbers, still in an outbox
    const legacyId = randomUUID();
    await orderSold(sale.purchase({ productId, userId: 'u2', quantity: 1, orderId: legacyId }));
    expect(orderProductNumber(legacyId)).toBeUndefined();
    const missing = mintOrderId(meta.number);
    const missingElsewhere = mintOrderId(4_000_000);

    const costs = async () => ({
      sold: await cost(async () => {
        expect((await lookup.find(sold.orderId, { userId: 'u1' }))?.status).toBe('pending');
      }),
      soldAdmin: await cost(async () => {
        expect((await lookup.find(sold.orderId, { admin: true }))?.userId).toBe('u1');
      }),
      notTheirs: await cost(async () => {
        expect(await lookup.find(sold.orderId, { userId: 'u2' })).toBeNull();
      }),
      legacy: await cost(async () => {
        expect((await lookup.find(legacyId, { userId: 'u2' }))?.status).toBe('pending');
      }),
      missing: await cost(async () => {
        expect(await lookup.find(missing, { userId: 'u1' })).toBeNull();
      }),
      missingElsewhere: await cost(async () => {
        expect(await lookup.find(missingElsewhere, { userId: 'u1' })).toBeNull();
      }),
      missingLegacy: await cost(async () => {
        expect(await lookup.find(randomUUID(), { userId: 'u1' })).toBeNull();
      }),
    });
    const before = await costs();
    // a few commands each: the product (one HGET), its meta, the shopper's marker, the outboxes
    expect(before.missing).toBeLessThanOrEqual(4 + meta.maxSegments);
    await growArchive(40);
    expect(await costs()).toEqual(before);
  });
});

describe('the active set', () => {
  it('keeps a product with work to do, and archives it once quiet and done', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 10, segments: 2, strategy: 'lockfree' });
    expect(Number(await activeScore(productId))).toBeGreaterThan(Date.now());
    await orderSold(s.rt.inventory.sale.purchase({ productId, userId: 'w1', quantity: 1 }));
    await timeRunsOut([productId]);
    // its time ran out, but an order is still only in its outbox: it stays
    await sweepOnce();
    expect(await activeScore(productId)).toBe('1');
    // persisted and cleared (what the worker does): nothing left, so it is archived
    for (let seg = 0; seg < 2; seg++) await s.rt.redis.del(keys.segment(productId, seg).outbox);
    await sweepOnce();
    expect(await activeScore(productId)).toBeNull();
    // archived, still there: readable, reconcilable, for sale
    expect((await readProductState(deps(), productId))!.sold).toBe(1);
    expect(await s.rt.products.reconcile(productId)).not.toBeNull();
    expect((await readProductStates(deps(), 200)).map((p) => p.productId)).not.toContain(productId);
    // a purchase makes it active again before its deduct writes anything (another process: this
    // one's touch is a moment old, while a real archive comes minutes after a lease ran out)
    const other = saleProcess(config);
    try {
      await orderSold(other.inv.sale.purchase({ productId, userId: 'w2', quantity: 1 }));
    } finally {
      await other.close();
    }
    expect(Number(await activeScore(productId))).toBeGreaterThan(Date.now());
  });

  it('a deduct refuses a touch older than its lease, and writes nothing', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 10, segments: 1, strategy: 'lockfree' });
    const k = keys.segment(productId, 0);
    const r = await deduct(s.rt.redis, k, {
      mode: 'home',
      epoch: 1,
      fence: 0,
      userId: 'late',
      quantity: 1,
      orderId: randomUUID(),
      productId,
      segment: 0,
      homeSegment: 0,
      touchedAt: Date.now() - TOUCH_LEASE_MS - 5_000,
    });
    expect(r.code).toBe('untouched');
    expect((await readProductState(deps(), productId))!.remaining).toBe(10);
    expect(await s.rt.redis.xlen(k.outbox)).toBe(0);
    expect(await s.rt.redis.hlen(k.claims)).toBe(0);
  });

  it('a process whose touch grew too old touches again and sells', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 10, segments: 1, strategy: 'lockfree' });
    const sale = s.rt.inventory.sale;
    await orderSold(sale.purchase({ productId, userId: 'early', quantity: 1 }));
    // as if this process had stalled: its cached touch is past the lease, though fresh locally
    const leases = (sale as unknown as { leases: { touched: Map<string, object> } }).leases;
    leases.touched.set(productId, { at: Date.now() - TOUCH_LEASE_MS - 5_000, localAt: Date.now() });
    await s.rt.redis.zadd(keys.active(), 'XX', 1, productId);
    await orderSold(sale.purchase({ productId, userId: 'late', quantity: 1 }));
    expect(Number(await activeScore(productId))).toBeGreaterThan(Date.now());
    expect((await readProductState(deps(), productId))!.remaining).toBe(8);
  });

  it('a sweep and the operator views read only the active products, whatever the archive', async () => {
    // whatever earlier tests left active is archived first, if it can be
    await timeRunsOut(await s.rt.redis.zrange(keys.active(), '0', '-1'));
    await sweepOnce();
    const live = newProduct();
    await seedProduct(deps(), live, { total: 10, segments: 3, strategy: 'lockfree' });
    const before = {
      sweep: await cost(sweepOnce),
      views: await cost(() => readProductStates({ redis: probe, keys }, 200)),
    };
    const archived = await growArchive(40);
    expect(await s.rt.redis.scard(keys.products())).toBeGreaterThanOrEqual(archived.length + 1);
    expect({
      sweep: await cost(sweepOnce),
      views: await cost(() => readProductStates({ redis: probe, keys }, 200)),
    }).toEqual(before);
    const shown = (await readProductStates(deps(), 200)).map((p) => p.productId);
    expect(shown).toContain(live);
    for (const id of archived) expect(shown).not.toContain(id);
  });

  it('a quiet product costs a sweep no read until something touches it (issue 46)', async () => {
    const seedQuiet = async (howMany: number) => {
      const ids = Array.from({ length: howMany }, newProduct);
      for (const id of ids) {
        await seedProduct(deps(), id, { total: 5, segments: 4, strategy: 'lockfree' });
        // touched long before the sweep that finds it quiet (seeded a while ago)
        await s.rt.redis.zadd(keys.activity().touches, 'XX', Date.now() - 600_000, id);
      }
      return ids;
    };
    const first = await seedQuiet(10);
    await sweepOnce(); // reads them, finds no work, marks them quiet
    const withTen = await cost(sweepOnce);
    const more = await seedQuiet(40);
    await sweepOnce();
    const report = await sweepOnce();
    expect(report.untouched).toBeGreaterThanOrEqual(50);
    // fifty quiet products cost a sweep what ten did: no command per product
    expect(await cost(sweepOnce)).toBe(withTen);
    // a purchase touches one (before its deduct writes anything): the next sweep reads it again
    const other = saleProcess(config);
    try {
      await other.inv.sale.purchase({ productId: first[0]!, userId: 'q1', quantity: 1 });
    } finally {
      await other.close();
    }
    const after = await sweepOnce();
    expect(after.untouched).toBe(report.untouched - 1);
    expect(await cost(sweepOnce)).toBeGreaterThan(withTen);
    expect(more).toHaveLength(40);
  });
});
