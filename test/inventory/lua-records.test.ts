/**
 * Each record format the Lua scripts read and write is defined once, in an include
 * (lua/includes/buyerMarker.lua, spillClaim.lua, productMeta.lua, segmentState.lua), and agrees
 * with its TypeScript side (src/inventory/records/marker.ts, claim.ts, hash-fields.ts with the
 * meta and segment-state codecs): records written by one are read back by the other, through a
 * real Redis (EVAL of the include itself).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeClaim, encodeClaim } from '../../src/inventory/records/claim.js';
import {
  CATALOGUE_FIELD,
  META_FIELD,
  ROOM_FIELD,
  DRAW_FIELD,
  STATE_FIELD,
} from '../../src/inventory/records/hash-fields.js';
import { decodeRoomCounters, ROOM_COUNTER_FIELDS } from '../../src/inventory/records/room-state.js';
import {
  decodeMarker,
  encodeMarker,
  type BuyerMarker,
} from '../../src/inventory/records/marker.js';
import {
  decodeMeta,
  encodeChallenge,
  encodePrice,
  encodeDrawWindow,
  encodeRoomSettings,
  type ProductChallenge,
  type ProductMeta,
} from '../../src/inventory/records/product-meta.js';
import {
  decodeSegmentState,
  SEGMENT_STATE_FIELDS,
} from '../../src/inventory/records/segment-state.js';
import { LUA_DIR, renderScript } from '../../src/redis/scripts.js';
import { luaFiles, stringLiterals, structureCounts } from '../../tools/structure-counts.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
let redis: Redis;
beforeAll(() => {
  redis = new Redis(ns.redisUrl);
});
afterAll(() => {
  redis.disconnect();
});

const include = (name: string) => readFileSync(join(LUA_DIR, 'includes', `${name}.lua`), 'utf8');

/** Runs `body` after the include, with ARGV; no keys (the helpers are pure). */
const lua = (name: string, body: string, ...args: string[]) =>
  redis.eval(`${include(name)}\n${body}`, 0, ...args) as Promise<unknown>;

/** Runs `body` after the include, with one key (KEYS[1]) and ARGV. */
const luaOn = (name: string, key: string, body: string, ...args: Array<string | number>) =>
  redis.eval(`${include(name)}\n${body}`, 1, key, ...args) as Promise<unknown>;

let keyN = 0;
const freshKey = (what: string) => `${ns.id}:lua-records:${what}:${++keyN}`;

const MARKERS: BuyerMarker[] = [
  { units: 1, orderIds: ['0192f0c4-6a1e-8c00-8000-000000000001'] },
  { units: 3, orderIds: ['a', 'b', 'c'] },
  { units: 12, orderIds: ['o-1', 'o-2'] },
];

describe('the buyer marker: lua/includes/buyerMarker.lua and records/marker.ts agree', () => {
  it('Lua reads what TypeScript writes', async () => {
    for (const m of MARKERS) {
      const [units, orders, last, has, hasNot] = (await lua(
        'buyerMarker',
        `local u, o = markerRead(ARGV[1])
         return {u, o, markerLast(o), markerHas(o, ARGV[2]) and 1 or 0, markerHas(o, 'zz') and 1 or 0}`,
        encodeMarker(m),
        m.orderIds[0]!,
      )) as [number, string, string, number, number];
      expect({ units, orderIds: orders.split(',') }).toEqual(m);
      expect(last).toBe(m.orderIds.at(-1));
      expect([has, hasNot]).toEqual([1, 0]);
    }
    // no marker: 0 units, no orders
    expect(
      await lua('buyerMarker', 'local u, o = markerRead(nil); return {u, o == nil and 1 or 0}'),
    ).toEqual([0, 1]);
  });

  it('TypeScript reads what Lua writes (a first order, then one more)', async () => {
    const first = (await lua(
      'buyerMarker',
      'local u, o = markerRead(nil); return markerWrite(u + 2, markerAppend(o, ARGV[1]))',
      'first',
    )) as string;
    expect(decodeMarker(first)).toEqual({ units: 2, orderIds: ['first'] });
    const second = (await lua(
      'buyerMarker',
      'local u, o = markerRead(ARGV[1]); return markerWrite(u + 1, markerAppend(o, ARGV[2]))',
      first,
      'second',
    )) as string;
    expect(decodeMarker(second)).toEqual({ units: 3, orderIds: ['first', 'second'] });
  });
});

describe('the spill claim: lua/includes/spillClaim.lua and records/claim.ts agree', () => {
  it('each reads what the other writes', async () => {
    const claim = {
      orderId: '0192f0c4-6a1e-8c00-8000-00000000000a',
      quantity: 4,
      at: 1795556509614,
    };
    expect(
      await lua('spillClaim', 'local o, q = claimRead(ARGV[1]); return {o, q}', encodeClaim(claim)),
    ).toEqual([claim.orderId, 4]);
    const written = (await lua(
      'spillClaim',
      'return claimWrite(ARGV[1], tonumber(ARGV[2]), ARGV[3])',
      claim.orderId,
      '4',
      String(claim.at),
    )) as string;
    expect(decodeClaim(written)).toEqual(claim);
  });
});

/** `local META_EPOCH = 'epoch'` lines of an include: Lua constant -> hash field. */
const declaredFields = (name: string, prefix: string) =>
  Object.fromEntries(
    [...include(name).matchAll(new RegExp(`^local (${prefix}_[A-Z_]+) = '([^']*)'$`, 'gm'))].map(
      (m) => [m[1]!, m[2]!],
    ),
  );

/** The Lua constant of a hash-fields.ts property: `limitPerUser` -> `META_LIMIT_PER_USER`. */
const constantOf = (prefix: string, property: string) =>
  `${prefix}_${property.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

describe('hash field names: the hash includes and hash-fields.ts agree', () => {
  it.each([
    ['productMeta', 'META', META_FIELD],
    ['segmentState', 'STATE', STATE_FIELD],
    ['roomState', 'ROOM', ROOM_FIELD],
    ['catalogueHash', 'CATALOGUE', CATALOGUE_FIELD],
    ['drawState', 'DRAW', DRAW_FIELD],
  ] as const)('%s.lua declares exactly the fields of %s_FIELD', async (name, prefix, fields) => {
    const expected = Object.fromEntries(
      Object.entries(fields).map(([property, field]) => [constantOf(prefix, property), field]),
    );
    expect(declaredFields(name, prefix)).toEqual(expected);
    // and they are in scope when the include runs (a nil would cut the returned list short)
    const constants = Object.keys(expected);
    expect(await lua(name, `return {${constants.join(', ')}}`)).toEqual(Object.values(expected));
  });
});

describe('the loader folds the constants of the hash includes', () => {
  it('a rendered script names no constant: its helpers read the literals (no upvalue per call)', () => {
    const constants = {
      ...declaredFields('productMeta', 'META'),
      ...declaredFields('segmentState', 'STATE'),
    };
    const users = luaFiles()
      .filter((f) => !f.startsWith('includes/')) // an include is checked in the scripts inlining it
      .filter((f) =>
        /--- @include "(productMeta|segmentState)"/.test(readFileSync(join(LUA_DIR, f), 'utf8')),
      )
      .map((f) => f.replace(/-\d+\.lua$/, ''));
    expect(users.sort()).toEqual([
      'beginSeed',
      'clearSoldOut',
      'deduct',
      'deductFree',
      'deductKeyed',
      'deductKeyedFree',
      'dropMeta',
      'dropUnits',
      'markSoldOut',
      'restock',
      'seedSegment',
      'segmentWindow',
    ]);
    for (const name of users) {
      const lua = renderScript(name, {});
      const left = Object.keys(constants).filter((c) => new RegExp(`\\b${c}\\b`).test(lua));
      expect({ name, left }).toEqual({ name, left: [] });
    }
    expect(renderScript('deduct', {})).toContain(
      "redis.call('HMGET', key, 'epoch', 'stock', 'startsAt', 'endsAt',",
    );
  });
});

/** A meta hash as TypeScript names its fields (what HGETALL returns). */
const metaHash = (m: ProductMeta): Record<string, string> =>
  Object.fromEntries(
    Object.entries(META_FIELD).map(([property, field]) => {
      const v = m[property as keyof ProductMeta];
      if (property === 'waitingRoom') return [field, encodeRoomSettings(m.waitingRoom!)];
      if (property === 'price') return [field, encodePrice(m.price!)];
      if (property === 'draw') return [field, encodeDrawWindow(m.draw!)];
      if (property === 'challenge')
        return [field, encodeChallenge(m.challenge as ProductChallenge)];
      return [field, typeof v === 'boolean' ? (v ? '1' : '0') : String(v)];
    }),
  );

describe('the product meta: lua/includes/productMeta.lua and records/product-meta.ts agree', () => {
  const sample: ProductMeta = {
    epoch: 4,
    total: 1000,
    segments: 8,
    strategy: 'segmented',
    startsAt: 1795556509614,
    endsAt: 1795560109614,
    limitPerUser: 2,
    soldOutEpoch: 3,
    maxSegments: 16,
    payWithinSeconds: 900,
    requireSaleToken: true,
    number: 12,
    waitingRoom: { admitPerSecond: 50, maxActive: 200, admittedForSeconds: 120 },
    price: { amount: 12_999, currency: 'EUR' },
    paused: false,
    draw: { entriesOpenAt: 1795550000000, entriesCloseAt: 1795556000000, buyWithinSeconds: 600 },
    challenge: { kind: 'pow', floorMs: 800 },
  };

  it('TypeScript reads what Lua writes: a new epoch, its sold-out mark, the next epoch', async () => {
    const key = freshKey('meta');
    const begin = (maxSegments: number) =>
      luaOn(
        'productMeta',
        key,
        'return metaBegin(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])',
        sample.total,
        sample.segments,
        sample.strategy,
        sample.startsAt,
        sample.endsAt,
        sample.limitPerUser,
        sample.payWithinSeconds,
        1,
        maxSegments,
      );
    expect(await begin(sample.maxSegments)).toBe(1);
    // the catalogue number is TypeScript's own write (catalogue-numbers.ts)
    await redis.hset(key, META_FIELD.number, sample.number);
    // so are the waiting room's settings (seeding.ts)
    await redis.hset(key, META_FIELD.waitingRoom, encodeRoomSettings(sample.waitingRoom!));
    // and the price (seeding.ts)
    await redis.hset(key, META_FIELD.price, encodePrice(sample.price!));
    // and the draw's window (seeding.ts)
    await redis.hset(key, META_FIELD.draw, encodeDrawWindow(sample.draw!));
    // and the product's challenge (seeding.ts)
    await redis.hset(key, META_FIELD.challenge, encodeChallenge({ kind: 'pow', floorMs: 800 }));
    const first = decodeMeta(await redis.hgetall(key));
    expect(first).toEqual({ ...sample, epoch: 1, soldOutEpoch: 0 });
    expect(Object.keys(first!).sort()).toEqual(Object.keys(META_FIELD).sort());

    await luaOn('productMeta', key, 'metaSetSoldOutEpoch(KEYS[1], ARGV[1])', 1);
    expect(decodeMeta(await redis.hgetall(key))).toMatchObject({ epoch: 1, soldOutEpoch: 1 });
    expect(await begin(sample.maxSegments)).toBe(2);
    expect(decodeMeta(await redis.hgetall(key))).toMatchObject({ epoch: 2, soldOutEpoch: 0 });
    await luaOn('productMeta', key, 'metaSetSoldOutEpoch(KEYS[1], 0)');
    expect(decodeMeta(await redis.hgetall(key))?.soldOutEpoch).toBe(0);
  });

  it('Lua reads what TypeScript names', async () => {
    const key = freshKey('meta');
    await redis.hset(key, metaHash(sample));
    expect(decodeMeta(await redis.hgetall(key))).toEqual(sample);
    expect(
      await luaOn(
        'productMeta',
        key,
        'return {metaEpoch(KEYS[1]), metaSoldOutEpoch(KEYS[1]), metaForSeed(KEYS[1])}',
      ),
    ).toEqual(
      [
        sample.epoch,
        sample.soldOutEpoch,
        // metaForSeed: epoch, startsAt, endsAt, soldOut, segments, maxSegments
        sample.epoch,
        sample.startsAt,
        sample.endsAt,
        sample.soldOutEpoch,
        sample.segments,
        sample.maxSegments,
      ].map(String),
    );
    // a product never seeded: no epoch
    expect(
      await luaOn('productMeta', freshKey('meta'), 'return metaEpoch(KEYS[1]) == false and 1 or 0'),
    ).toBe(1);
  });
  it("TypeScript reads a drop control's change Lua wrote; anything but a flag, a time and three integers is refused before a write", async () => {
    const key = freshKey('meta');
    await redis.hset(key, metaHash(sample));
    const drop = (...args: string[]) =>
      luaOn('productMeta', key, 'return metaSetDrop(KEYS[1], ARGV[1], ARGV[2], ARGV[3])', ...args);
    await drop('1', '1795560000000', '7 8 9');
    const changed = {
      paused: true,
      endsAt: 1795560000000,
      waitingRoom: { admitPerSecond: 7, maxActive: 8, admittedForSeconds: 9 },
    };
    expect(decodeMeta(await redis.hgetall(key))).toEqual({ ...sample, ...changed });
    for (const bad of [
      ['2', '1', '1 2 3'],
      ['0', '12x', '1 2 3'],
      ['0', '1', `1 2 ${'3'.repeat(40)}`],
      ['0', '1', '1 2 3 4'],
    ]) {
      await expect(drop(...bad)).rejects.toThrow(/dropMeta/);
    }
    expect(decodeMeta(await redis.hgetall(key))).toEqual({ ...sample, ...changed });
  });
});

describe('the segment state: lua/includes/segmentState.lua and records/segment-state.ts agree', () => {
  const window = { startsAt: 1795556509614, endsAt: 1795560109614, limit: 3, payWithin: 600 };
  const seed = (key: string, epoch: number, stock: number) =>
    luaOn(
      'segmentState',
      key,
      'stateSeed(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])',
      epoch,
      stock,
      window.startsAt,
      window.endsAt,
      window.limit,
      window.payWithin,
    );
  const read = async (key: string) =>
    decodeSegmentState(await redis.hmget(key, ...SEGMENT_STATE_FIELDS));

  it('TypeScript reads what Lua writes: a seed, a fenced sale, a return, a reseed', async () => {
    const key = freshKey('state');
    await seed(key, 3, 10);
    expect(await read(key)).toEqual({
      epoch: 3,
      stock: 10,
      sold: 0,
      returned: 0,
      fence: 0,
      added: 0,
    });
    expect(
      await luaOn(
        'segmentState',
        key,
        `local _, stock, _, _, _, _, _, sold = stateForDeduct(KEYS[1])
         local left = stateTake(KEYS[1], tonumber(stock), tonumber(sold), 2, 7)
         return {left, stateReturn(KEYS[1], 1)}`,
      ),
    ).toEqual([8, 9]);
    expect(await read(key)).toEqual({
      epoch: 3,
      stock: 9,
      sold: 2,
      returned: 1,
      fence: 7,
      added: 0,
    });
    // every field Lua wrote, under the name TypeScript gives it
    const f = STATE_FIELD;
    expect(await redis.hgetall(key)).toEqual({
      [f.epoch]: '3',
      [f.stock]: '9',
      [f.sold]: '2',
      [f.returned]: '1',
      [f.fence]: '7',
      [f.startsAt]: String(window.startsAt),
      [f.endsAt]: String(window.endsAt),
      [f.limitPerUser]: String(window.limit),
      [f.payWithinSeconds]: String(window.payWithin),
      [f.recordsSpills]: '1',
      [f.added]: '0',
      [f.taken]: '0',
    });
    // a reseed starts the counts again and keeps the fence (an old lock holder stays refused)
    await seed(key, 4, 5);
    expect(await read(key)).toEqual({
      epoch: 4,
      stock: 5,
      sold: 0,
      returned: 0,
      fence: 7,
      added: 0,
    });
  });

  it('Lua reads what TypeScript names', async () => {
    const key = freshKey('state');
    const f = STATE_FIELD;
    await redis.hset(key, {
      [f.epoch]: 6,
      [f.stock]: 40,
      [f.sold]: 11,
      [f.returned]: 1,
      [f.startsAt]: window.startsAt,
      [f.endsAt]: window.endsAt,
      [f.limitPerUser]: window.limit,
      [f.payWithinSeconds]: window.payWithin,
    });
    // stateForDeduct: epoch, stock, startsAt, endsAt, limit, fence (false: none yet), payWithin,
    // sold
    expect(
      await luaOn(
        'segmentState',
        key,
        `local e, s, a, b, l, fence, w, sold = stateForDeduct(KEYS[1])
         return {stateEpoch(KEYS[1]), e, s, a, b, l, fence == false and 'none' or fence, w, sold}`,
      ),
    ).toEqual(
      [
        '6',
        '6',
        '40',
        window.startsAt,
        window.endsAt,
        window.limit,
        'none',
        window.payWithin,
        '11',
      ].map(String),
    );
    await redis.hset(key, f.fence, 9);
    expect(
      await luaOn(
        'segmentState',
        key,
        'local _, _, _, _, _, fence = stateForDeduct(KEYS[1]); return fence',
      ),
    ).toBe('9');
    expect(await read(key)).toEqual({
      epoch: 6,
      stock: 40,
      sold: 11,
      returned: 1,
      fence: 9,
      added: 0,
    });
    // an epoch an older version seeded records no spill; one seeded now does
    const recordsSpills = () =>
      luaOn('segmentState', key, 'return stateRecordsSpills(KEYS[1]) and 1 or 0');
    expect(await recordsSpills()).toBe(0);
    await redis.hset(key, f.recordsSpills, 1);
    expect(await recordsSpills()).toBe(1);
    // a segment never seeded: no epoch
    expect(
      await luaOn(
        'segmentState',
        freshKey('state'),
        'return stateEpoch(KEYS[1]) == false and 1 or 0',
      ),
    ).toBe(1);
  });

  it("an operator's changes of units: added is the net, taken what was taken off; the end by Redis's clock", async () => {
    const key = freshKey('state');
    const f = STATE_FIELD;
    await seed(key, 1, 10);
    const adjust = (units: number) =>
      luaOn('segmentState', key, 'return stateAdjust(KEYS[1], tonumber(ARGV[1]), nil)', units);
    expect(await adjust(10)).toBe(20);
    expect(await adjust(-3)).toBe(17);
    expect(await adjust(-2)).toBe(15);
    expect(await redis.hmget(key, f.added, f.taken)).toEqual(['5', '5']);
    const ended = (now: number) =>
      luaOn('segmentState', key, 'return stateEnded(KEYS[1], tonumber(ARGV[1])) and 1 or 0', now);
    expect(await ended(window.endsAt - 1)).toBe(0);
    expect(await ended(window.endsAt)).toBe(1);
    await redis.hset(key, f.endsAt, 0);
    expect(await ended(window.endsAt * 2)).toBe(0);
  });
});

describe('the room hash: lua/includes/roomState.lua and records/room-state.ts agree', () => {
  it('TypeScript reads the counters Lua reads, as Lua wrote them', async () => {
    const key = freshKey('room');
    await redis.hset(key, ROOM_FIELD.served, 7, ROOM_FIELD.opened, 1, ROOM_FIELD.lobbyCount, 12);
    const [served, opened, lobbyCount] = (await luaOn(
      'roomState',
      key,
      'return {roomPlaceCounters(KEYS[1])}',
    )) as number[];
    expect({ served, opened: opened === 1, lobbyCount }).toEqual(
      decodeRoomCounters(await redis.hmget(key, ...ROOM_COUNTER_FIELDS)),
    );
    expect({ served, opened, lobbyCount }).toEqual({ served: 7, opened: 1, lobbyCount: 12 });
    // a room never joined: all zero, on both sides
    const none = freshKey('room');
    expect(await luaOn('roomState', none, 'return {roomPlaceCounters(KEYS[1])}')).toEqual([
      0, 0, 0,
    ]);
    expect(decodeRoomCounters(await redis.hmget(none, ...ROOM_COUNTER_FIELDS))).toEqual({
      served: 0,
      opened: false,
      lobbyCount: 0,
    });
  });
});

describe('one definition per record format', () => {
  // `npm run structure` counts these (tools/structure-counts.ts): any script that parses or writes
  // a buyer marker or a spill claim itself, and any Lua file that names a meta or segment-state
  // field outside its include
  it('no script spells a record format itself: only the includes do', () => {
    expect(structureCounts().luaRecordFormatsOutsideIncludes).toEqual([]);
    // and the includes do define them (the check would pass on a format that moved away)
    expect(include('buyerMarker')).toMatch(/%d\+\):\(/);
    expect(include('spillClaim')).toMatch(/\.\. '\|' \.\./);
    // the scan sees the includes' own fields (it would pass on a reader that found nothing)
    expect(stringLiterals(include('segmentState'))).toEqual(
      expect.arrayContaining(Object.values(STATE_FIELD)),
    );
    expect(stringLiterals(include('productMeta'))).toEqual(
      expect.arrayContaining(Object.values(META_FIELD)),
    );
  });

  it('every script that takes a hash record includes its definition', () => {
    const missing = luaFiles()
      .filter((f) => !f.startsWith('includes/'))
      .flatMap((f) => {
        const text = readFileSync(join(LUA_DIR, f), 'utf8');
        return [
          /KEYS\[\d\] product meta hash/.test(text) && !text.includes('--- @include "productMeta"')
            ? `${f}: productMeta`
            : [],
          /KEYS\[\d\] segment state hash/.test(text) &&
          !text.includes('--- @include "segmentState"')
            ? `${f}: segmentState`
            : [],
          /KEYS\[\d\] room hash/.test(text) && !text.includes('--- @include "roomState"')
            ? `${f}: roomState`
            : [],
          /KEYS\[\d\] catalogue hash/.test(text) && !text.includes('--- @include "catalogueHash"')
            ? `${f}: catalogueHash`
            : [],
        ].flat();
      });
    expect(missing).toEqual([]);
  });
});
