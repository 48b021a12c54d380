/**
 * The command connection's timeout (REDIS_COMMAND_TIMEOUT_MS, src/redis/connection.ts) times
 * Redis, not this process: a reply that came while the event loop was busy past the timeout is
 * read, and a command held back by a busy turn is timed from when it left. Otherwise a loaded API
 * fails deducts Redis answered, and sold purchases are answered 503 (their shoppers, trying
 * again, 409 sold-out). The loop is held busy on purpose while redis-cli, which needs no event
 * loop, sees Redis answer.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProduct } from '../../src/inventory/index.js';
import { createRedis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { useNamespace } from '../support/namespace.js';
import { saleProcess, testDb, type SaleProcess } from '../support/sale.js';
import { binDirs } from '../support/servers.js';

const ns = useNamespace();
const TIMEOUT_MS = 1_000;
const redisCli = join(binDirs().redis, 'redis-cli');

/** One command's reply by redis-cli: read while this process's event loop is held busy. */
const cli = (...args: string[]) =>
  execFileSync(redisCli, ['-u', ns.redisUrl, ...args], { encoding: 'utf8' }).trim();

/** Holds this process's event loop busy (nothing is read or fired) until `done`. */
function busyUntil(done: () => boolean): void {
  while (!done());
}

/** Resolves in the check phase, after the turn's commands were written (coalesceWrites). */
const afterTheWrite = () => new Promise<void>((resolve) => setImmediate(resolve));

const outcomes = (settled: PromiseSettledResult<unknown>[]) =>
  settled.map((s) => (s.status === 'fulfilled' ? s.value : String(s.reason)));

describe('a command timeout while the event loop is busy', () => {
  let redis: Redis;
  let connects = 0;
  beforeAll(async () => {
    redis = createRedis(ns.redisUrl, { name: 'timeout-test', commandTimeoutMs: TIMEOUT_MS });
    await redis.ping();
    redis.on('connect', () => connects++);
  });
  afterAll(() => redis.disconnect());

  const newKey = () => `${ns.id}:n${randomBytes(4).toString('hex')}`;
  const forty = (key: string) =>
    Promise.allSettled(Array.from({ length: 40 }, () => redis.incr(key)));
  const oneToForty = Array.from({ length: 40 }, (_, i) => i + 1);

  it('replies that came while the loop was busy past the timeout are read, not timed out', async () => {
    const key = newKey();
    const replies = forty(key);
    await afterTheWrite();
    const left = Date.now();
    // Redis runs the forty (their replies wait in the socket), and the loop stays busy past the timeout
    busyUntil(() => cli('GET', key) === '40');
    busyUntil(() => Date.now() - left > TIMEOUT_MS);
    expect(outcomes(await replies)).toEqual(oneToForty);
    expect(connects).toBe(0);
  });

  it('commands a busy turn held back are timed from when they left, not from when they were made', async () => {
    const key = newKey();
    const made = Date.now();
    const replies = forty(key);
    // the turn that made them stays busy past the timeout: they leave in its check phase
    busyUntil(() => Date.now() - made > TIMEOUT_MS);
    expect(outcomes(await replies)).toEqual(oneToForty);
    expect(connects).toBe(0);
  });
});

describe('purchases that sold while the event loop was busy past the timeout', () => {
  const config = ns.config();
  const keys = new Keys(ns.id);
  const db = testDb(config);
  let proc: SaleProcess;
  beforeAll(() => {
    proc = saleProcess(config, { commandTimeoutMs: TIMEOUT_MS });
  });
  afterAll(async () => {
    await proc.close();
    await db.destroy();
  });

  it('are answered sold: 40 sold, then sold out, nothing left', async () => {
    const productId = `t${randomBytes(4).toString('hex')}`;
    const deps = { redis: proc.redis, keys, db, catalogue: proc.inv.catalogue };
    await seedProduct(deps, productId, { total: 41, segments: 1, strategy: 'global' });
    const buy = (userId: string) => proc.inv.sale.purchase({ productId, userId, quantity: 1 });
    // the first loads the view, touches the active set and loads the script: the forty then send
    // their deducts (the free segment lock taken inside each) in the turn that makes them
    expect((await buy('first')).kind).toBe('sold');
    const forty = Promise.all(Array.from({ length: 40 }, (_, i) => buy(`b${i}`)));
    await afterTheWrite();
    const left = Date.now();
    busyUntil(() => cli('HGET', keys.segment(productId, 0).state, 'sold') === '41');
    busyUntil(() => Date.now() - left > TIMEOUT_MS);
    const kinds = (await forty).map((o) => (o.kind === 'refused' ? o.refusal.code : o.kind));
    expect(kinds).toEqual(Array.from({ length: 40 }, () => 'sold'));
    const late = await buy('late');
    expect(late.kind === 'refused' && late.refusal.code).toBe('sold-out');
    expect(cli('HMGET', keys.segment(productId, 0).state, 'stock', 'sold')).toBe('0\n41');
  });
});
