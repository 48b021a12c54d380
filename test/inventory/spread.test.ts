/**
 * Segment hash tags spread a product's segments evenly over a cluster's slots (src/redis/spread.ts),
 * and products seeded under the old plain tags are moved to them (src/inventory/migrations/key-migration.ts).
 */
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateSegmentKeys, readProductState, seedProduct } from '../../src/inventory/index.js';
import { createRedisClient, type Redis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { spreadTag } from '../../src/redis/spread.js';
import { useNamespace } from '../support/namespace.js';
import { testDb } from '../support/sale.js';

/** Masters of an evenly split cluster, by slot. */
const ownerOf = (slot: number, masters: number) => Math.floor((slot * masters) / 16_384);

function busiest(productId: string, segments: number, masters: number): number {
  const per = new Array<number>(masters).fill(0);
  for (let i = 0; i < segments; i++)
    per[ownerOf(calculateSlot(spreadTag(productId, i)), masters)]!++;
  return Math.max(...per);
}

describe('spread tags', () => {
  it('put at most ceil(N/3) + 1 segments on any of 3 masters, for N = 4, 16, 64 and 300 product ids', () => {
    for (const n of [4, 16, 64]) {
      for (let p = 0; p < 300; p++) {
        expect(busiest(`prod-${p}`, n, 3), `N=${n} prod-${p}`).toBeLessThanOrEqual(
          Math.ceil(n / 3) + 1,
        );
      }
    }
  });

  it('keep a segment its tag whatever the segment count (a reseed finds the old outbox)', () => {
    const before = Array.from({ length: 8 }, (_, i) => spreadTag('keep', i));
    const after = Array.from({ length: 16 }, (_, i) => spreadTag('keep', i));
    expect(after.slice(0, 8)).toEqual(before);
  });

  it('never give two products the same tag ("a" segment 1 and "a:1" segment 0)', () => {
    const tags = new Set<string>();
    for (const p of ['a', 'a:1', 'a:1:0', 'a.1', 'a-1']) {
      for (let i = 0; i < 64; i++) {
        const t = spreadTag(p, i);
        expect(tags.has(t), `${p} ${i} -> ${t}`).toBe(false);
        tags.add(t);
      }
    }
  });
});

describe('products seeded under plain tags', () => {
  const ns = useNamespace();
  const keys = new Keys(ns.id);
  let redis: Redis;
  const db = () => testDb(ns.config());
  beforeAll(() => {
    redis = createRedisClient({ url: ns.redisUrl }, { name: 'test-migration' }) as Redis;
  });
  afterAll(() => redis.disconnect());

  it('are moved to spread tags with their stock, buyers and outbox, once', async () => {
    const productId = `old${ns.id}`;
    const d = db();
    await seedProduct({ redis, keys, db: d }, productId, {
      total: 40,
      segments: 4,
      strategy: 'lockfree',
    });
    await redis.hset(keys.segment(productId, 2).buyers, 'someone', '1:o-1');
    await redis.xadd(keys.segment(productId, 2).outbox, '*', 'o', 'o-1');
    const before = await readProductState({ redis, keys }, productId);
    // as the previous version left them: every segment key under {P:i}
    let moved = 0;
    for (let i = 0; i < 4; i++) {
      const spread = `${keys.prefix}:{${keys.segmentLockName(productId, i)}}`;
      const plain = `${keys.prefix}:{${productId}:${i}}`;
      if (spread === plain) continue;
      for (const key of await redis.keys(`${spread}:*`)) {
        await redis.rename(key, plain + key.slice(spread.length));
        moved++;
      }
    }
    expect(moved).toBeGreaterThan(0);
    expect((await readProductState({ redis, keys }, productId))!.remaining).toBeLessThan(40);

    expect(await migrateSegmentKeys({ redis, keys })).toBe(moved);
    expect(await readProductState({ redis, keys }, productId)).toEqual(before);
    expect(await redis.hget(keys.segment(productId, 2).buyers, 'someone')).toBe('1:o-1');
    expect(await redis.xlen(keys.segment(productId, 2).outbox)).toBe(1);
    expect(await migrateSegmentKeys({ redis, keys })).toBe(0);
    await d.destroy();
  });
});
