/**
 * Each record format the Lua scripts read and write is defined once, in an include
 * (lua/includes/buyerMarker.lua, spillClaim.lua), and agrees with its TypeScript codec
 * (src/inventory/records/marker.ts, claim.ts): records written by one are read back by the other,
 * through a real Redis (EVAL of the include itself).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeClaim, encodeClaim } from '../src/inventory/records/claim.js';
import { decodeMarker, encodeMarker, type BuyerMarker } from '../src/inventory/records/marker.js';
import { LUA_DIR } from '../src/redis/scripts.js';
import { useNamespace } from './support/namespace.js';

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

describe('one definition per record format', () => {
  it('no script parses or writes a marker or a claim itself: only the includes do', () => {
    const scripts = readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua'));
    const inline = scripts.flatMap((f) => {
      const text = readFileSync(join(LUA_DIR, f), 'utf8');
      return [
        // the marker's "<units>:<orders>" pattern or its writing with ':'
        /%d\+\):\(/.test(text) || /\.\. ':' \.\./.test(text) ? `${f}: buyer marker` : [],
        // the claim's "<order>|<qty>|<at>" pattern or its writing with '|'
        /\[\^\|\]/.test(text) || /\.\. '\|' \.\./.test(text) ? `${f}: spill claim` : [],
      ].flat();
    });
    expect(inline).toEqual([]);
    // and the includes do define them (the check above would pass on a file that moved away)
    expect(include('buyerMarker')).toMatch(/%d\+\):\(/);
    expect(include('spillClaim')).toMatch(/\.\. '\|' \.\./);
  });
});
