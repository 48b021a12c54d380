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
  type IdempotencyHandle,
} from '../src/inventory/index.js';
import { Keys } from '../src/redis/keys.js';
import { requestFingerprint } from '../src/services/idempotency.js';
import { startApp, type RunningApp } from './support/app.js';
import { useNamespace } from './support/namespace.js';
import { startTestRedis } from './support/servers.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
const SEGMENTS = 4;
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config());
});
afterAll(() => app.close());

const newProduct = () => `p${randomBytes(4).toString('hex')}`;

async function seed(productId: string, body: Record<string, unknown> = {}) {
  const res = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ strategy: 'lockfree', segments: SEGMENTS, total: 10, ...body }),
  });
  expect(res.status).toBe(201);
}

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

/** The keys of every command the app's connection sends while `run` runs. */
async function keysTouched(run: () => Promise<unknown>): Promise<string[]> {
  const target = app.rt.redis as unknown as {
    sendCommand: (cmd: { getKeys(): (string | Buffer)[] }, ...a: unknown[]) => unknown;
  };
  const original = target.sendCommand;
  const touched: string[] = [];
  target.sendCommand = function (cmd, ...rest) {
    touched.push(...cmd.getKeys().map(String));
    return original.call(this, cmd, ...rest);
  };
  try {
    await run();
  } finally {
    target.sendCommand = original;
  }
  return touched;
}

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
    expect(own.length).toBeGreaterThanOrEqual(3); // claim, deduct, settle
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
      encodeIdempotencyRecord({ fp, done: { status: 202, contentType: 'application/json', body } }),
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

describe('what a keyed purchase costs its record', () => {
  it('a claim below the cap and its settle run exactly these commands; the index is pruned only at the cap', async () => {
    const server = await startTestRedis();
    const redis = new Redis(server.url);
    try {
      const own = new Keys(`${ns.id}cost`);
      const store = new IdempotencyStore(redis, own, { get: () => null }, 600, 5_000, 3);
      const fresh = (i: number) => ({ fp: 'f', orderId: `o${i}`, productId: 'p', quantity: 1 });
      await store.finish((await store.begin('u', 'warm', fresh(0))) as IdempotencyHandle, {
        status: 202,
        contentType: 'application/json',
        body: '{}',
      });
      await redis.config('RESETSTAT');
      const begun = (await store.begin('u', 'k1', fresh(1))) as IdempotencyHandle;
      await store.finish(begun, { status: 202, contentType: 'application/json', body: '{}' });
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
