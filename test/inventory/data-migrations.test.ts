/**
 * Redis data migrations run once (recorded like the SQL ones), not at every start: a restart
 * during a sale must not scan the keyspace for every segment of every product. A redis-server of
 * its own, so INFO commandstats counts this file's commands only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.js';
import { readMeta, seedProduct } from '../../src/inventory/index.js';
import { Redis } from 'ioredis';
import { Keys } from '../../src/redis/keys.js';
import { runCli } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { testDb } from '../support/sale.js';
import { startTestRedis } from '../support/servers.js';
import { META_FIELD } from '../../src/inventory/records/hash-fields.js';

const ns = useNamespace();
let server: Awaited<ReturnType<typeof startTestRedis>>;
let redis: Redis;
let db: Db;
const keys = new Keys(ns.id);
const PRODUCTS = 30;
const SEGMENTS = 4;

beforeAll(async () => {
  server = await startTestRedis();
  redis = new Redis(server.url);
  db = testDb(ns.config({ REDIS_URL: server.url }));
});
afterAll(async () => {
  redis.disconnect();
  await db.destroy();
  await server.stop();
});

/** `seckill migrate` against this file's Redis and database; its output. */
async function migrate(): Promise<string> {
  const run = runCli(['migrate'], {
    REDIS_URL: server.url,
    DATABASE_URL: ns.databaseUrl,
    KEY_PREFIX: ns.id,
    QUEUE_PREFIX: `{${ns.id}q}`,
    LOG_LEVEL: 'warn',
  });
  const code = await run.exited;
  expect(code, run.output()).toBe(0);
  return run.output();
}

/** Calls per command since the last CONFIG RESETSTAT. */
async function commandStats(): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  const stats = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats.set(m[1]!, Number(m[2]));
  return stats;
}

describe('Redis data migrations', () => {
  it('run once on a catalogue the previous version left; a second start scans nothing', async () => {
    const ids = Array.from({ length: PRODUCTS }, (_, i) => `mig${i}`);
    for (const id of ids) {
      await seedProduct({ redis, keys, db }, id, {
        total: 40,
        segments: SEGMENTS,
        strategy: 'lockfree',
      });
    }
    // as the previous version left it: no catalogue numbers, no active set, nothing recorded
    await redis.del(keys.catalogue(), keys.active(), keys.dataMigrations());
    for (const id of ids) await redis.hdel(keys.product(id).meta, META_FIELD.number);

    const first = await migrate();
    expect(first).toMatch(/0002-catalogue-numbers \(numbered 30 products\)/);
    expect(first).toMatch(/0003-active-products \(put 30 products in the active set\)/);
    const numbers = new Set<number>();
    for (const id of ids) numbers.add((await readMeta({ redis, keys }, id))!.number);
    expect([...numbers].every((n) => n > 0)).toBe(true);
    expect(numbers.size).toBe(PRODUCTS);
    expect(await redis.zcard(keys.active())).toBe(PRODUCTS);

    await redis.config('RESETSTAT');
    const second = await migrate();
    expect(second).toMatch(/Redis data is up to date/);
    const stats = await commandStats();
    // one read of what was applied; no scan, no walk over the products
    expect(stats.get('scan')).toBeUndefined();
    expect(stats.get('smembers')).toBeUndefined();
    expect(stats.get('hgetall')).toBe(1);
    const total = [...stats.entries()]
      .filter(([name]) => !['config', 'info'].includes(name))
      .reduce((a, [, calls]) => a + calls, 0);
    expect(total).toBeLessThan(PRODUCTS);
  });
});
