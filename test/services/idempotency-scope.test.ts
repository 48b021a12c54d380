/**
 * An Idempotency-Key is scoped to a shopper and a product ("this purchase of this product"): its
 * record lives beside the shopper's home segment of the product, so a keyed purchase touches one
 * slot (one shard); the same key for another product is another purchase; another body for the
 * same product is still a 422. Records written in the old place (one per shopper) stay readable.
 */
import { createHash, randomBytes } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  encodeIdempotencyRecord,
  homeSegment,
  IdempotencyStore,
  migrateRedisData,
  type FoldedRecord,
  type IdempotencyHandle,
} from '../../src/inventory/index.js';
import { Keys } from '../../src/redis/keys.js';
import { loadScripts } from '../../src/redis/scripts.js';
import { requestFingerprint } from '../../src/services/purchase/idempotency.js';
import { startApp, type RunningApp } from '../support/app.js';
import { outboxEntriesOf } from '../support/orders.js';
import { useNamespace } from '../support/namespace.js';
import { startTestRedis } from '../support/servers.js';
import { orderSold } from '../support/sale.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { deadlineOf } from '../support/cli.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
const SEGMENTS = 4;
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config());
  // every script in the server's cache: a first use (NOSCRIPT, then sent again) would count twice
  await loadScripts(app.rt.redis);
});
afterAll(() => app.close());

const newProduct = () => `p${randomBytes(4).toString('hex')}`;

const seed = (productId: string, body: Record<string, unknown> = {}) =>
  seedSale(app.url, productId, { strategy: 'lockfree', segments: SEGMENTS, total: 10, ...body });

async function buy(on: RunningApp, productId: string, user: string, key: string, quantity = 1) {
  const res = await fetch(`${on.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user, 'idempotency-key': key },
    body: JSON.stringify({ productId, quantity }),
  });
  const body = (await res.json()) as { orderId?: string; type?: string };
  return {
    status: res.status,
    orderId: body.orderId,
    code: body.type?.split(':').pop(),
    replayed: res.headers.get('idempotent-replayed') === 'true',
  };
}

const remaining = async (productId: string) => (await app.rt.products.state(productId))!.remaining;

/** Every command the app's connection sends while `run` runs: its name and its keys. */
async function commandsSent(run: () => Promise<unknown>) {
  const target = app.rt.redis as unknown as {
    sendCommand: (
      cmd: { name: string; getKeys(): (string | Buffer)[] },
      ...a: unknown[]
    ) => unknown;
  };
  const original = target.sendCommand;
  const sent: Array<{ name: string; keys: string[] }> = [];
  target.sendCommand = function (cmd, ...rest) {
    sent.push({ name: cmd.name, keys: cmd.getKeys().map(String) });
    return original.call(this, cmd, ...rest);
  };
  try {
    await run();
  } finally {
    target.sendCommand = original;
  }
  return sent;
}

/** The keys of every command the app's connection sends while `run` runs. */
async function keysTouched(run: () => Promise<unknown>): Promise<string[]> {
  return (await commandsSent(run)).flatMap((c) => c.keys);
}

/**
 * The commands of one keyed purchase by `user` (the app's background work sends others
 * meanwhile): those on the shopper's records, or on a segment's state (every deduct names it).
 */
async function purchaseCommands(productId: string, user: string, run: () => Promise<unknown>) {
  const states = new Set(
    Array.from({ length: SEGMENTS }, (_, i) => keys.segment(productId, i).state),
  );
  const home = keys.segment(productId, homeSegment(user, SEGMENTS));
  const records = keys.idempotency(productId, homeSegment(user, SEGMENTS), user).all;
  const recordPrefix = records.slice(0, -'#all'.length);
  return (await commandsSent(run)).filter((c) =>
    c.keys.some((k) => states.has(k) || k === home.claims || k.startsWith(recordPrefix)),
  );
}

/** A shopper whose home segment of a SEGMENTS-segment product is `segment`. */
function shopperAt(segment: number): string {
  const overdue = deadlineOf(`a shopper at home on segment ${segment}`, 10_000);
  for (;;) {
    overdue();
    const user = `u${randomBytes(4).toString('hex')}`;
    if (homeSegment(user, SEGMENTS) === segment) return user;
  }
}

/** Outbox entries of `productId` naming `orderId`, over every segment. */
const outboxEntries = (productId: string, orderId: string) =>
  outboxEntriesOf(app.rt.redis, keys, { productId, segments: SEGMENTS, orderId });

describe('Idempotency-Key scope: a shopper and a product', () => {
  it('a keyed purchase touches only the slot of the home segment it buys from', async () => {
    const productId = newProduct();
    await seed(productId);
    expect((await buy(app, productId, 'warm', 'w')).status).toBe(202); // the view is learnt
    const user = `u${randomBytes(3).toString('hex')}`;
    const mine = await keysTouched(async () => {
      expect((await buy(app, productId, user, 'k1')).status).toBe(202);
    });
    // the purchase's own keys (the app's background work touches others meanwhile)
    const own = mine.filter((k) => k.includes(user) || k.includes(productId));
    const home = keys.segment(productId, homeSegment(user, SEGMENTS)).state;
    expect(own.length).toBeGreaterThanOrEqual(1); // the deduct with the record
    expect(new Set(own.map(calculateSlot))).toEqual(new Set([calculateSlot(home)]));
  });

  it('the same key for another product is a new purchase; another quantity for the same product is a 422', async () => {
    const [a, b] = [newProduct(), newProduct()];
    await seed(a);
    await seed(b);
    const first = await buy(app, a, 'shopper', 'same-key');
    const other = await buy(app, b, 'shopper', 'same-key');
    expect(first).toMatchObject({ status: 202, replayed: false });
    expect(other).toMatchObject({ status: 202, replayed: false });
    expect(other.orderId).not.toBe(first.orderId);
    expect([await remaining(a), await remaining(b)]).toEqual([9, 9]);
    // each replays its own answer
    expect(await buy(app, a, 'shopper', 'same-key')).toEqual({ ...first, replayed: true });
    expect(await buy(app, b, 'shopper', 'same-key')).toEqual({ ...other, replayed: true });
    expect(await buy(app, a, 'shopper', 'same-key', 2)).toMatchObject({
      status: 422,
      code: 'idempotency-key-reused',
    });
    expect([await remaining(a), await remaining(b)]).toEqual([9, 9]);
  });

  it('a record the previous version wrote in the old place is still replayed, never sold again', async () => {
    const productId = newProduct();
    await seed(productId);
    const user = `old${randomBytes(3).toString('hex')}`;
    // what the previous version stored under {idem:<user>}: the answer of a purchase that sold
    const body = JSON.stringify({ orderId: 'o-before', productId, quantity: 1 });
    const old = keys.legacyIdempotency(user);
    const member = createHash('sha256').update('k-old').digest('base64url');
    const fp = requestFingerprint({ productId, quantity: 1 });
    await app.rt.redis.set(
      old.record(member),
      encodeIdempotencyRecord({
        fp,
        done: {
          kind: 'sent',
          response: { status: 202, contentType: 'application/json', body },
          sold: true,
        },
      }),
      'EX',
      600,
    );
    await app.rt.redis.del(keys.dataMigrations());
    await app.rt.redis.del(keys.idempotencyLegacyUntil());
    const ran = await migrateRedisData({ redis: app.rt.redis, keys });
    expect(ran).toContain(
      '0004-idempotency-beside-home-segment (1 keys of records in the old place stay readable)',
    );
    const until = Number(await app.rt.redis.get(keys.idempotencyLegacyUntil()));
    // the record's expiry and a rollout's length: a previous version's process may still write
    expect(until).toBeGreaterThan(Date.now() + 600_000 + 50 * 60_000);
    // a process started after the migration reads the old place on a miss
    const later = await startApp(ns.config());
    try {
      const replay = await buy(later, productId, user, 'k-old');
      expect(replay).toEqual({ status: 202, orderId: 'o-before', code: undefined, replayed: true });
      expect(await remaining(productId)).toBe(10);
      // nothing claimed in the new place for it
      const fresh = keys.idempotency(productId, homeSegment(user, SEGMENTS), user);
      expect(await app.rt.redis.exists(fresh.record(member), fresh.all)).toBe(0);
      // a new key of the same shopper is claimed in the new place
      expect(await buy(later, productId, user, 'k-new')).toMatchObject({ status: 202 });
      const newMember = createHash('sha256').update('k-new').digest('base64url');
      expect(await app.rt.redis.exists(fresh.record(newMember))).toBe(1);
    } finally {
      await later.close();
      await app.rt.redis.del(keys.idempotencyLegacyUntil());
    }
  });

  it('a fresh install has no old records to read: the migration leaves no window', async () => {
    const bare = new Keys(`${ns.id}bare`);
    expect(await migrateRedisData({ redis: app.rt.redis, keys: bare })).toContain(
      '0004-idempotency-beside-home-segment',
    );
    expect(await app.rt.redis.exists(bare.idempotencyLegacyUntil())).toBe(0);
  });
});

describe('a keyed purchase folded into its home deduct', () => {
  it('a sale from the home segment is one EVALSHA: the deduct reads and writes the record', async () => {
    const productId = newProduct();
    await seed(productId);
    expect((await buy(app, productId, 'warm', 'w')).status).toBe(202); // view learnt, script loaded
    const user = shopperAt(1);
    let first!: Awaited<ReturnType<typeof buy>>;
    const calls = await purchaseCommands(productId, user, async () => {
      first = await buy(app, productId, user, 'k1');
    });
    expect(first).toMatchObject({ status: 202, replayed: false });
    const home = keys.segment(productId, 1);
    const records = keys.idempotency(productId, 1, user);
    const member = createHash('sha256').update('k1').digest('base64url');
    expect(calls).toEqual([
      {
        name: 'evalsha',
        keys: [
          home.state,
          home.buyers,
          home.claims,
          home.outbox,
          home.voided(first.orderId!),
          home.spilled,
          home.shopperRateLimit('seckill', user), // in KEYS for the slot: limits off, untouched
          records.record(member),
          records.all,
          records.refusals,
        ],
      },
    ]);
    // the record as a claim and a settle leave it, without an index entry: a sale's record is
    // bounded by the per-user limit, not the cap (lua/includes/keyedRecord.lua)
    const fp = requestFingerprint({ productId, quantity: 1 });
    const stored = JSON.parse((await app.rt.redis.get(records.record(member)))!) as {
      f: string;
      s: number;
      o: string;
    };
    expect(stored).toEqual({ f: fp, o: first.orderId, p: productId, q: 1, s: 1 });
    expect(await app.rt.redis.pttl(records.record(member))).toBeGreaterThan(590_000);
    expect(await app.rt.redis.exists(records.all, records.refusals)).toBe(0);
    // a replay is one call too, and changes nothing
    const replayCalls = await purchaseCommands(productId, user, async () => {
      expect(await buy(app, productId, user, 'k1')).toEqual({ ...first, replayed: true });
    });
    expect(replayCalls.map((c) => c.name)).toEqual(['evalsha']);
    expect(await buy(app, productId, user, 'k1', 2)).toMatchObject({
      status: 422,
      code: 'idempotency-key-reused',
    });
    expect(await remaining(productId)).toBe(8);
    expect(await outboxEntries(productId, first.orderId!)).toBe(1);
  });

  it('a shopper whose home segment is empty spills under the record the deduct wrote: one order, replayed', async () => {
    const productId = newProduct();
    await seed(productId, { total: 2 }); // segments 0 and 1 hold a unit each, 2 and 3 none
    const user = shopperAt(3);
    expect((await buy(app, productId, 'warm', 'w')).status).toBe(202);
    let first!: Awaited<ReturnType<typeof buy>>;
    const calls = await purchaseCommands(productId, user, async () => {
      first = await buy(app, productId, user, 'k-spill');
    });
    expect(first).toMatchObject({ status: 202, replayed: false });
    expect(await buy(app, productId, user, 'k-spill')).toEqual({ ...first, replayed: true });
    expect(await outboxEntries(productId, first.orderId!)).toBe(1);
    // the folded claim at home (the only call there), the spill, the claim's settle, the record's
    const home = keys.segment(productId, 3);
    const records = keys.idempotency(productId, 3, user);
    const onHome = calls.filter((c) => c.keys.includes(home.state));
    expect(onHome).toHaveLength(1);
    expect(onHome[0]!.keys).toContain(records.all);
    expect(calls.filter((c) => c.keys.includes(records.all))).toHaveLength(2);
    expect(calls.filter((c) => c.keys[1] === home.claims)).toHaveLength(1);
    expect(await remaining(productId)).toBe(0);
    expect(await app.rt.redis.hlen(home.claims)).toBe(0);
    expect(await app.rt.redis.hget(home.buyers, user)).toMatch(/^1:/);
    // sold out: the key still answers its sale, another key is refused
    expect(await buy(app, productId, user, 'k-spill')).toEqual({ ...first, replayed: true });
    expect(await buy(app, productId, user, 'k-other')).toMatchObject({ status: 409 });
  });

  it('a locked segment held by another process: the deduct writes nothing, the key is claimed the usual way and sells once', async () => {
    const productId = newProduct();
    await seed(productId, { strategy: 'segmented' });
    expect((await buy(app, productId, 'warm', 'w')).status).toBe(202);
    const user = shopperAt(2);
    const home = keys.segment(productId, 2);
    const other = await startApp(ns.config());
    try {
      const holder = (await other.rt.inventory.locks.acquire(keys.segmentLockName(productId, 2), {
        leaseMs: 10_000,
      }))!;
      const fence = Number(await app.rt.redis.get(home.lock.fence));
      let first!: Awaited<ReturnType<typeof buy>>;
      const calls = await purchaseCommands(productId, user, async () => {
        first = await buy(app, productId, user, 'k-busy');
      });
      // the held home segment was passed by nothing: its lock waited out, the unit spilled
      expect(first).toMatchObject({ status: 202, replayed: false });
      expect(await app.rt.redis.hget(home.state, STATE_FIELD.stock)).toBe('2');
      expect(Number(await app.rt.redis.get(home.lock.fence))).toBe(fence);
      // the folded call answered contended and wrote nothing; then the usual claim, the deduct
      // that found the lock contended, (the lock waited for,) the spill claim at home, the spill,
      // its settle, the record's settle
      expect(calls.map((c) => c.name)).toEqual(Array(7).fill('evalsha'));
      expect(calls[0]!.keys).toContain(home.lock.lock);
      expect(calls[0]!.keys).toContain(keys.idempotency(productId, 2, user).all);
      await holder.release();
      expect(await buy(app, productId, user, 'k-busy')).toEqual({ ...first, replayed: true });
      expect(await outboxEntries(productId, first.orderId!)).toBe(1);
      expect(await remaining(productId)).toBe(8);
    } finally {
      await other.close();
    }
  });

  it('an attempt after its record was written (a reseed met by the spill) runs the usual deduct, never folds again', async () => {
    const productId = newProduct();
    await seed(productId);
    const user = shopperAt(0);
    // home empty, the other segments already reseeded: every spill meets the reseed
    await app.rt.redis.hset(keys.segment(productId, 0).state, STATE_FIELD.stock, 0);
    for (let seg = 1; seg < SEGMENTS; seg++) {
      await app.rt.redis.hset(keys.segment(productId, seg).state, STATE_FIELD.epoch, 2);
    }
    const before = await remaining(productId);
    const place = keys.idempotency(productId, 0, user);
    const member = createHash('sha256').update('k-again').digest('base64url');
    const keyed: FoldedRecord = {
      keys: [place.record(member), place.all, place.refusals],
      member,
      segment: 0,
      done: 'done',
      running: 'running',
      ttlSeconds: 600,
      cap: 100,
    };
    const r = await app.rt.inventory.sale.purchase({
      productId,
      userId: user,
      quantity: 1,
      record: keyed,
    });
    // the first attempt wrote the running record with its spill claim; the next ones ran the
    // usual deduct under it (a fold would have found that record and answered unfolded)
    expect(r).toMatchObject({ kind: 'refused', record: 'running' });
    expect(r.kind === 'refused' && r.refusal.code).toBe('reseeding');
    expect(await app.rt.redis.get(place.record(member))).toBe('running');
    expect(await remaining(productId)).toBe(before);
  });
});

describe('what a keyed purchase costs its record', () => {
  it('a claim below the cap and its settle run exactly these commands; the index is pruned only at the cap', async () => {
    const server = await startTestRedis();
    const redis = new Redis(server.url);
    try {
      const own = new Keys(`${ns.id}cost`);
      const store = new IdempotencyStore(redis, own, { get: () => null }, 600, 5_000, 3);
      const fresh = (i: number) => ({ fp: 'f', orderId: `o${i}`, productId: 'p', quantity: 1 });
      const soldAnswer = (i: number) =>
        ({ kind: 'sold', orderId: `o${i}`, productId: 'p', quantity: 1 }) as const;
      await store.finish(
        (await store.begin('u', 'warm', fresh(0))) as IdempotencyHandle,
        soldAnswer(0),
      );
      await redis.config('RESETSTAT');
      const begun = (await store.begin('u', 'k1', fresh(1))) as IdempotencyHandle;
      await store.finish(begun, soldAnswer(1));
      expect(await commandStats(redis)).toEqual(
        new Map([
          ['evalsha', 2],
          ['get', 1],
          ['time', 1],
          ['zcard', 1],
          ['set', 2],
          ['zadd', 1],
          ['pexpire', 1],
        ]),
      );
      // at the cap (3), the claim prunes what expired before it counts
      await store.begin('u', 'k2', fresh(2));
      await redis.config('RESETSTAT');
      expect((await store.begin('u', 'k3', fresh(3))).kind).toBe('full');
      expect((await commandStats(redis)).get('zremrangebyscore')).toBe(2);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});

/** Calls per command since the last CONFIG RESETSTAT (this file's own Redis only). */
async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const stats = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!/^(config|info)/.test(m[1]!)) stats.set(m[1]!, Number(m[2]));
  }
  return stats;
}
