import type { Config } from '../../src/config/index.js';
import { createDb, type Db } from '../../src/db/index.js';
import {
  createInventory,
  SaleError,
  type Inventory,
  type SaleReply,
  type SoldOrder,
} from '../../src/inventory/index.js';
import { homeSegment } from '../../src/inventory/layout.js';
import { Cluster, createRedisClient, type RedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { startTestRedis } from './servers.js';

export interface SaleProcess {
  inv: Inventory;
  redis: RedisClient;
  close(): Promise<void>;
}

/**
 * The inventory of one API process: its own command and subscriber connections (the command one
 * with a command timeout, as `seckill serve`'s, when `commandTimeoutMs` is given).
 */
export function saleProcess(config: Config, opts: { commandTimeoutMs?: number } = {}): SaleProcess {
  const redis = createRedisClient(config.redis, { name: 'test-sale', ...opts });
  const subscriber = createRedisClient(config.redis, {
    name: 'test-sale-sub',
    role: 'subscriber',
    overrides: { lazyConnect: true },
  });
  const inv = createInventory({
    redis,
    subscriber,
    keys: new Keys(config.redis.keyPrefix),
    lock: {
      watchdogTimeoutMs: config.lock.watchdogTimeoutMs,
      localQueue: config.lock.localQueue,
      waitMs: config.lock.waitMs,
      leaseMs: config.lock.leaseMs,
      queueMs: config.lock.queueMs,
    },
  });
  return {
    inv,
    redis,
    async close() {
      await inv.close();
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}

/**
 * A sale process on a redis-server of its own, for a test that counts a sale's commands on the
 * server (INFO commandstats): a shared server counts every parallel file's commands too, and
 * under the whole suite none of fifteen tries came out clean once. `configWith` is the
 * namespace's `config` (a REDIS_URL given there wins over the project's Redis, a cluster's too).
 */
export async function soloSaleProcess(
  configWith: (env: Record<string, string>) => Config,
  env: Record<string, string> = {},
): Promise<SaleProcess> {
  const server = await startTestRedis();
  const proc = saleProcess(configWith({ ...env, REDIS_URL: server.url }));
  return {
    ...proc,
    async close() {
      await proc.close();
      await server.stop();
    },
  };
}

export function testDb(config: Config): Db {
  return createDb(config.postgres.url, { max: 3 });
}

/** Sum of every command's calls (INFO commandstats), without INFO itself; every master's. */
export async function totalCalls(redis: RedisClient): Promise<number> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let n = 0;
  for (const node of nodes) {
    const info = await node.info('commandstats');
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (m[1] !== 'info' && m[1] !== 'cluster') n += Number(m[2]);
    }
  }
  return n;
}

/** The first shopper id `<tag><n>` whose home segment is `seg` of `segments`. */
export function shopperOf(seg: number, segments: number, tag: string): string {
  for (let i = 0; i < 1_000_000; i++) {
    if (homeSegment(`${tag}${i}`, segments) === seg) return `${tag}${i}`;
  }
  throw new Error(`no shopper id ${tag}<n> at home on segment ${seg} of ${segments}`);
}

/**
 * The order a purchase sold, or its end thrown, as tests assert it: the refusal (as a SaleError),
 * the store's failure (its cause), or an Error naming any other end.
 */
export async function orderSold(reply: Promise<SaleReply>): Promise<SoldOrder> {
  const r = await reply;
  if (r.kind === 'sold') return r.order;
  if (r.kind === 'refused') throw new SaleError(r.refusal);
  if (r.kind === 'failed') throw r.cause;
  throw new Error(`the purchase ended ${r.kind}`);
}
