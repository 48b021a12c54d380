/**
 * The locked segment's uncontended path (lua/deductFree-11.lua): a segment whose lock nobody holds,
 * waits for or is handed is deducted in one call that takes, fences and gives back the lock; a
 * holder, a waiter or a reservation sends the purchase the full way, and every count stays exact.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.js';
import { readProductState, seedProduct } from '../../src/inventory/index.js';
import { homeSegment } from '../../src/inventory/layout.js';
import { deduct, deductFree, type DeductArgs } from '../../src/inventory/sale/protocol.js';
import { Keys } from '../../src/redis/keys.js';
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

beforeAll(() => {
  db = testDb(config);
  procs = Array.from({ length: 2 }, () => saleProcess(config));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.close()));
  await db.destroy();
});

const deps = () => ({ redis: procs[0]!.redis, keys, db, catalogue: procs[0]!.inv.catalogue });
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const soldIn = async (productId: string, seg: number, proc = procs[0]!) =>
  (await readProductState({ redis: proc.redis, keys }, productId))!.segments[seg]!.sold;
const fenceOf = async (productId: string, seg: number, proc = procs[0]!) =>
  Number((await proc.redis.get(keys.segment(productId, seg).lock.fence)) ?? 0);

describe('a free segment lock', () => {
  it('is taken inside the deduct: 1 command more than a lock-free sale, fenced, nothing left held', async () => {
    // a Redis of its own: the server's counts are this process's commands alone
    const solo = await soloSaleProcess(ns.config, { LOCK_WAIT_MS: '2000' });
    try {
      const free = newProduct();
      const locked = newProduct();
      const soloDeps = { redis: solo.redis, keys, db, catalogue: solo.inv.catalogue };
      await seedProduct(soloDeps, free, { total: 80, segments: 4, strategy: 'lockfree' });
      await seedProduct(soloDeps, locked, { total: 80, segments: 4, strategy: 'segmented' });
      const { sale } = solo.inv;
      const { redis } = solo;
      // warm: the product views and the activity touches are this process's from now on
      await orderSold(sale.purchase({ productId: free, userId: 'warm', quantity: 1 }));
      await orderSold(sale.purchase({ productId: locked, userId: 'warm', quantity: 1 }));
      // the least of five: a background touch of this process's own may land in one
      const cost = async (productId: string, tag: string) => {
        let least = Infinity;
        for (let i = 0; i < 5; i++) {
          const before = await totalCalls(redis);
          await orderSold(
            sale.purchase({ productId, userId: shopperOf(2, 4, `${tag}${i}-`), quantity: 1 }),
          );
          least = Math.min(least, (await totalCalls(redis)) - before);
        }
        return least;
      };
      const fence = await fenceOf(locked, 2, solo);
      const lockFreeCost = await cost(free, 'a');
      // INCR fence: the EXISTS of holder, line and reservation counts the order's void mark too,
      // which a lock-free sale asks alone; the state's fence is written by the HSET of its stock
      // and sold; no lock script
      expect((await cost(locked, 'a')) - lockFreeCost).toBe(1);
      expect(await fenceOf(locked, 2, solo)).toBe(fence + 5);
      const lock = keys.segment(locked, 2).lock;
      expect(await redis.exists(lock.lock, lock.queue, lock.handoff)).toBe(0);
      expect(await soldIn(locked, 2, solo)).toBe(homeSegment('warm', 4) === 2 ? 6 : 5);
    } finally {
      await solo.close();
    }
  });

  it("reads the order's void mark with the lock's keys: voided on a free lock, contended on a held one", async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 8, segments: 4, strategy: 'segmented' });
    const seg = 2;
    const sk = keys.segment(productId, seg);
    const { redis } = procs[0]!;
    const args = (orderId: string): DeductArgs => ({
      mode: 'home',
      epoch: 1,
      fence: 0,
      userId: shopperOf(seg, 4, 'v'),
      quantity: 1,
      orderId,
      productId,
      segment: seg,
      homeSegment: seg,
      touchedAt: Date.now(),
    });
    const dead = `dead-${randomBytes(4).toString('hex')}`;
    await redis.set(sk.voided(dead), '1', 'PX', 60_000);
    // the lock free: the mark alone is found, so the lock is taken and the order refused
    expect((await deductFree(redis, sk, args(dead))).code).toBe('voided');
    // held: contended, whatever the mark (the full way asks the mark under the lock)
    await redis.set(sk.lock.lock, 'someone', 'PX', 60_000);
    expect((await deductFree(redis, sk, args(dead))).code).toBe('contended');
    expect((await deductFree(redis, sk, args('alive'))).code).toBe('contended');
    await redis.del(sk.lock.lock);
    expect((await deductFree(redis, sk, args('alive'))).code).toBe('ok');
    expect(await soldIn(productId, seg)).toBe(1);
  });

  it('a holder in another process sends the purchase the full way: it waits, then sells once', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 8, segments: 4, strategy: 'segmented' });
    const user = shopperOf(1, 4, 'b');
    const holder = (await procs[1]!.inv.locks.acquire(keys.segmentLockName(productId, 1), {
      leaseMs: 10_000,
    }))!;
    const bought = orderSold(procs[0]!.inv.sale.purchase({ productId, userId: user, quantity: 1 }));
    // the scenario: time for a purchase past the holder to show
    await sleep(150);
    expect(await soldIn(productId, 1)).toBe(0); // not past the holder
    await holder.release();
    const order = await bought;
    expect(order.segment).toBe(1);
    expect(await soldIn(productId, 1)).toBe(1);
    expect(await fenceOf(productId, 1)).toBe(holder.fence + 1);
  });

  it('a hand-off reservation for another waiter is not passed: the purchase waits it out', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 8, segments: 4, strategy: 'segmented' });
    const user = shopperOf(3, 4, 'c');
    const lock = keys.segment(productId, 3).lock;
    await procs[0]!.redis.set(lock.handoff, 'someone:else', 'PX', 400);
    const bought = orderSold(procs[0]!.inv.sale.purchase({ productId, userId: user, quantity: 1 }));
    // the scenario: time for a purchase past the reservation to show
    await sleep(150);
    expect(await soldIn(productId, 3)).toBe(0);
    const order = await bought;
    expect(order.segment).toBe(3);
    expect(await soldIn(productId, 3)).toBe(1);
    expect(await procs[0]!.redis.exists(lock.lock, lock.handoff)).toBe(0);
  });

  it('a holder whose lease ran out cannot deduct after an uncontended sale took the segment', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, { total: 8, segments: 1, strategy: 'global' });
    const old = (await procs[1]!.inv.locks.acquire(keys.segmentLockName(productId, 0), {
      leaseMs: 50,
    }))!;
    // the scenario: the lease runs out, never unlocked
    await sleep(80);
    await orderSold(procs[0]!.inv.sale.purchase({ productId, userId: 'now', quantity: 1 }));
    expect(await fenceOf(productId, 0)).toBe(old.fence + 1);
    const late = await deduct(procs[1]!.redis, keys.segment(productId, 0), {
      mode: 'home',
      epoch: 1,
      fence: old.fence,
      userId: 'late',
      quantity: 1,
      orderId: 'late-order',
      productId,
      segment: 0,
      homeSegment: 0,
      touchedAt: Date.now(),
    });
    expect(late).toEqual({ code: 'stale-fence', lastFence: old.fence + 1 });
    expect(await soldIn(productId, 0)).toBe(1);
  });

  it('200 buyers over two processes, the free path and the full one mixed, sell exactly the stock', async () => {
    const productId = newProduct();
    await seedProduct(deps(), productId, {
      total: 60,
      segments: 4,
      strategy: 'segmented',
      limitPerUser: 1,
    });
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        orderSold(
          procs[i % 2]!.inv.sale.purchase({ productId, userId: `r${i}`, quantity: 1 }),
        ).then(
          () => 'accepted',
          (err: { code?: string }) => err.code ?? 'error',
        ),
      ),
    );
    const state = (await readProductState({ redis: procs[0]!.redis, keys }, productId))!;
    expect(outcomes.filter((o) => o === 'accepted').length).toBe(60);
    expect(outcomes.filter((o) => o !== 'accepted' && o !== 'sold-out')).toEqual([]);
    expect({ sold: state.sold, remaining: state.remaining }).toEqual({ sold: 60, remaining: 0 });
  });
});
