/**
 * One codec per Redis record, fed what the Lua scripts (and the few TypeScript writers) really
 * write on a real Redis: a field renamed in a script, or a separator changed, fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.js';
import {
  decodeIdempotencyRecord,
  encodeIdempotencyRecord,
  IdempotencyStore,
  type SaleRefusal,
  seedProduct,
} from '../../src/inventory/index.js';
import { clearSoldOut } from '../../src/inventory/catalogue/protocol.js';
import { claimSettle, releaseMarker, restock } from '../../src/inventory/outbox/protocol.js';
import { deduct, type DeductArgs } from '../../src/inventory/sale/protocol.js';
import { decodeClaim, encodeClaim } from '../../src/inventory/records/claim.js';
import { decodeMarker, encodeMarker } from '../../src/inventory/records/marker.js';
import { decodeOutboxEntry, type StreamEntry } from '../../src/inventory/records/outbox-entry.js';
import { decodeEvent, encodeEvent } from '../../src/inventory/records/product-events.js';
import { decodeMeta } from '../../src/inventory/records/product-meta.js';
import {
  decodeSegmentState,
  SEGMENT_STATE_FIELDS,
} from '../../src/inventory/records/segment-state.js';
import { createRedisClient, type RedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { serverNowMs } from '../../src/redis/time.js';
import { useNamespace } from '../support/namespace.js';
import { testDb } from '../support/sale.js';
import { META_FIELD, STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { waitFor } from '../support/cli.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
let redis: RedisClient;
let db: Db;
beforeAll(() => {
  redis = createRedisClient(ns.redisTarget, { name: 'test-records' });
  db = testDb(ns.config());
});
afterAll(async () => {
  redis.disconnect();
  await db.destroy();
});

let n = 0;
async function seeded(o: { segments: number; total: number; limitPerUser?: number }) {
  const productId = `rec${++n}`;
  const r = await seedProduct({ redis, keys, db }, productId, { strategy: 'lockfree', ...o });
  return { productId, epoch: r.epoch };
}

function args(productId: string, epoch: number, o: Partial<DeductArgs>): DeductArgs {
  return {
    mode: 'home',
    epoch,
    fence: 0,
    userId: 'u',
    quantity: 1,
    orderId: 'o',
    productId,
    segment: 0,
    homeSegment: 0,
    touchedAt: Date.now(), // the seed touched the product just now
    ...o,
  };
}

describe('records written by the Lua scripts', () => {
  it('buyer marker: units and order ids, oldest first', async () => {
    const { productId, epoch } = await seeded({ segments: 1, total: 5, limitPerUser: 3 });
    const seg = keys.segment(productId, 0);
    for (const orderId of ['o1', 'o2']) {
      const r = await deduct(
        redis,
        seg,
        args(productId, epoch, { orderId, quantity: orderId === 'o1' ? 2 : 1 }),
      );
      expect(r.code).toBe('ok');
    }
    const raw = await redis.hget(seg.buyers, 'u');
    expect(decodeMarker(raw)).toEqual({ units: 3, orderIds: ['o1', 'o2'] });
    expect(encodeMarker(decodeMarker(raw)!)).toBe(raw);
    expect(decodeMarker(null)).toBeNull();
  });

  it('spill claim: order, quantity and the server time it was placed', async () => {
    const { productId, epoch } = await seeded({ segments: 2, total: 4 });
    const seg = keys.segment(productId, 0);
    const before = await serverNowMs(redis);
    const r = await deduct(
      redis,
      seg,
      args(productId, epoch, { mode: 'claim', orderId: 'oc', quantity: 1 }),
    );
    expect(r.code).toBe('spill');
    const raw = await redis.hget(seg.claims, 'u');
    const claim = decodeClaim(raw)!;
    expect(claim.orderId).toBe('oc');
    expect(claim.quantity).toBe(1);
    expect(claim.at).toBeGreaterThanOrEqual(before);
    expect(claim.at).toBeLessThan(before + 5_000);
    expect(encodeClaim(claim)).toBe(raw);
    // finalising turns the claim into the marker the codec reads
    expect((await claimSettle(redis, seg, 'u', 'oc', 'finalise')).code).toBe('settled');
    expect(decodeMarker(await redis.hget(seg.buyers, 'u'))).toEqual({ units: 1, orderIds: ['oc'] });
  });

  it('restock: an order comes back once, to its epoch only; its marker is released once', async () => {
    const { productId, epoch } = await seeded({ segments: 1, total: 3, limitPerUser: 3 });
    const seg = keys.segment(productId, 0);
    for (const [orderId, quantity] of [
      ['r1', 2],
      ['r2', 1],
    ] as const) {
      expect((await deduct(redis, seg, args(productId, epoch, { orderId, quantity }))).code).toBe(
        'ok',
      );
    }
    const order = { epoch, orderId: 'r1', quantity: 2, userId: 'u' };
    expect(await restock(redis, seg, seg, order)).toEqual({ code: 'restocked', stock: 2 });
    expect(await restock(redis, seg, seg, order)).toEqual({ code: 'already' });
    expect(await releaseMarker(redis, seg, order)).toBe(true);
    expect(await releaseMarker(redis, seg, order)).toBe(false);
    expect(decodeMarker(await redis.hget(seg.buyers, 'u'))).toEqual({ units: 1, orderIds: ['r2'] });
    expect(decodeSegmentState(await redis.hmget(seg.state, ...SEGMENT_STATE_FIELDS))).toMatchObject(
      { stock: 2, sold: 3, returned: 2 },
    );
    // a reseed since: the new sale has its own stock; the old order is recorded, not added
    const again = await seedProduct(
      { redis, keys, db },
      productId,
      {
        strategy: 'lockfree',
        segments: 1,
        total: 3,
      },
      { force: true },
    );
    const old = { epoch, orderId: 'r2', quantity: 1, userId: 'u' };
    expect(await restock(redis, seg, seg, old)).toEqual({
      code: 'stale-epoch',
      epoch: again.epoch,
    });
    expect(await restock(redis, seg, seg, old)).toEqual({ code: 'already' });
    expect(await redis.hget(seg.state, STATE_FIELD.stock)).toBe('3');
    // the sold-out mark of an epoch is cleared by units coming back to it, not another's
    const meta = keys.product(productId);
    await redis.hset(meta.meta, META_FIELD.soldOutEpoch, again.epoch);
    expect(await clearSoldOut(redis, meta, epoch)).toBe(false);
    expect(await clearSoldOut(redis, meta, again.epoch)).toBe(true);
    expect(await redis.hget(meta.meta, META_FIELD.soldOutEpoch)).toBe('0');
  });

  it('product meta: what the seed wrote, and the sold-out epoch', async () => {
    const startsAt = new Date(Date.now() + 60_000);
    const productId = `rec${++n}`;
    await seedProduct({ redis, keys, db }, productId, {
      total: 10,
      segments: 3,
      strategy: 'segmented',
      startsAt,
      limitPerUser: 2,
    });
    const meta = decodeMeta(await redis.hgetall(keys.product(productId).meta));
    expect(meta).toEqual({
      epoch: 1,
      total: 10,
      segments: 3,
      strategy: 'segmented',
      startsAt: startsAt.getTime(),
      endsAt: 0,
      limitPerUser: 2,
      soldOutEpoch: 0,
      maxSegments: 3,
      payWithinSeconds: 0,
      requireSaleToken: false,
      waitingRoom: null,
      price: null,
      number: expect.any(Number),
      paused: false,
      draw: null,
      challenge: 'default',
    });
    expect(meta!.number).toBeGreaterThan(0);
    expect(decodeMeta({})).toBeNull();
  });

  it('segment state: epoch, stock, sold and the last accepted fence', async () => {
    const { productId, epoch } = await seeded({ segments: 1, total: 5, limitPerUser: 2 });
    const seg = keys.segment(productId, 0);
    expect((await deduct(redis, seg, args(productId, epoch, { fence: 7, quantity: 2 }))).code).toBe(
      'ok',
    );
    const state = decodeSegmentState(await redis.hmget(seg.state, ...SEGMENT_STATE_FIELDS));
    expect(state).toEqual({ epoch, stock: 3, sold: 2, returned: 0, fence: 7, added: 0 });
    expect(decodeSegmentState([null, null, null, null])).toBeNull();
  });

  it('outbox entry: every field of the sale, and the stream id as its time', async () => {
    const { productId, epoch } = await seeded({ segments: 2, total: 4 });
    const r = await deduct(
      redis,
      keys.segment(productId, 1),
      args(productId, epoch, {
        userId: 'w',
        orderId: 'ox',
        segment: 1,
        homeSegment: 0,
        mode: 'spill',
        quantity: 2,
      }),
    );
    expect(r.code).toBe('ok');
    const [entry] = (await redis.xrange(
      keys.segment(productId, 1).outbox,
      '-',
      '+',
    )) as StreamEntry[];
    const order = decodeOutboxEntry(entry!);
    expect(order).toEqual({
      orderId: 'ox',
      productId,
      userId: 'w',
      quantity: 2,
      segment: 1,
      homeSegment: 0,
      epoch,
      deductedAt: Number(entry![0].split('-')[0]),
      outboxId: entry![0],
      payWithinSeconds: 0,
    });
    expect(() => decodeOutboxEntry(['1-0', ['x', 'y']])).toThrow(/not an outbox entry/);
  });
});

describe('records written by TypeScript', () => {
  it('product events round-trip, and an unknown message is ignored, not fatal', () => {
    for (const e of [
      { kind: 'empty', epoch: 3, segment: 7 },
      { kind: 'soldout', epoch: 3 },
      { kind: 'reseed', epoch: 4 },
    ] as const) {
      expect(decodeEvent(encodeEvent(e))).toEqual(e);
    }
    expect(encodeEvent({ kind: 'empty', epoch: 3, segment: 7 })).toBe('empty 3 7');
    expect(decodeEvent('restock 3')).toBeNull();
    expect(decodeEvent('empty x 1')).toBeNull();
  });

  it('the reseed notice on the events channel is what the catalogue decodes', async () => {
    const { productId } = await seeded({ segments: 1, total: 1 });
    const sub = createRedisClient(ns.redisTarget, { name: 'test-sub', role: 'subscriber' });
    const got: string[] = [];
    await sub.ssubscribe(keys.product(productId).events);
    sub.on('smessage', (_c: string, m: string) => got.push(m));
    await seedProduct(
      { redis, keys, db },
      productId,
      { strategy: 'lockfree', segments: 1, total: 2 },
      { force: true },
    );
    await waitFor('the reseed notice', async () => got.length > 0, 5_000, 20);
    sub.disconnect();
    expect(got.map(decodeEvent)).toEqual([{ kind: 'reseed', epoch: 2 }]);
  });

  it('idempotency record: what the store writes, read back', async () => {
    const store = new IdempotencyStore(redis, keys, { get: () => null }, 60, 5_000);
    const fresh = { fp: 'fp-1', orderId: 'o-1', productId: 'p', quantity: 2 };
    const before = Date.now();
    const begun = await store.begin('u1', 'key-1', fresh);
    expect(begun.kind).toBe('new');
    if (begun.kind !== 'new') return;
    const running = decodeIdempotencyRecord((await redis.get(begun.key))!);
    expect(running).toMatchObject(fresh);
    expect(running.leaseUntil).toBeGreaterThanOrEqual(before + 5_000);
    await store.markUnknown(begun);
    expect(decodeIdempotencyRecord((await redis.get(begun.key))!).unknown).toBe(true);
    const sold = { kind: 'sold', orderId: 'o-1', productId: 'p', quantity: 2 } as const;
    await store.finish(begun, sold);
    // once answered, only what a replay needs is kept: the sale's order
    expect(JSON.parse((await redis.get(begun.key))!)).toEqual({
      f: 'fp-1',
      o: 'o-1',
      p: 'p',
      q: 2,
      s: 1,
    });
    expect(decodeIdempotencyRecord((await redis.get(begun.key))!)).toEqual({
      fp: fresh.fp,
      done: sold,
    });
    expect(() => decodeIdempotencyRecord('{"x":1}')).toThrow(/not an idempotency record/);
  });

  it('idempotency record: a refusal keeps what it means and the request it answered', () => {
    const refusal: SaleRefusal = {
      code: 'limit-reached',
      message: 'already bought 1',
      orderId: 'o-0',
    };
    const request = { id: 'req-1', url: '/seckill' };
    const raw = encodeIdempotencyRecord({ fp: 'f', done: { kind: 'refused', refusal, request } });
    const stored = JSON.parse(raw) as Record<string, unknown>;
    // a lease that never runs out: a process that knows only answered bytes answers 409
    expect(stored).toEqual({
      f: 'f',
      r: { c: 'limit-reached', m: 'already bought 1', o: 'o-0' },
      i: 'req-1',
      w: '/seckill',
      l: Number.MAX_SAFE_INTEGER,
    });
    const back = decodeIdempotencyRecord(raw);
    // a refusal is data: it comes back as it went in, a plain object (nothing to throw)
    expect(back.done).toStrictEqual({ kind: 'refused', refusal, request });
    expect(back.leaseUntil).toBeUndefined();
  });

  it('idempotency record: an answer stored as bytes before is replayed as it was', () => {
    const body = JSON.stringify({ orderId: 'o-9', status: 'pending', productId: 'p', quantity: 1 });
    const raw = JSON.stringify({ f: 'f', d: { s: 202, b: body, h: { Location: '/orders/o-9' } } });
    expect(decodeIdempotencyRecord(raw).done).toEqual({
      kind: 'sent',
      response: {
        status: 202,
        contentType: 'application/json',
        body,
        headers: { Location: '/orders/o-9' },
      },
      sold: true,
    });
    const refusal = JSON.stringify({ f: 'f', d: { s: 409, b: '{}' } });
    expect(decodeIdempotencyRecord(refusal).done).toEqual({
      kind: 'sent',
      response: { status: 409, contentType: 'application/problem+json', body: '{}' },
      sold: false,
    });
    // and written so again, byte for byte
    expect(encodeIdempotencyRecord(decodeIdempotencyRecord(raw))).toBe(raw);
  });
});
