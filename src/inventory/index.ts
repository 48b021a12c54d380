/**
 * The inventory of one process: key schema, shared subscriber, lock client, product catalog and
 * the sale. `createInventory` wires them from config; the runtime closes them.
 */
import { Counter, type Registry } from 'prom-client';
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { LockClient, promLockMetrics } from '../lock/index.js';
import { closeRedis, createRedis, type Redis } from '../redis/connection.js';
import { Keys } from '../redis/keys.js';
import { PubSub } from '../redis/pubsub.js';
import { Catalog } from './catalog.js';
import { Sale, type SaleMetrics } from './sale.js';

export { Catalog, type ProductView } from './catalog.js';
export { SaleError, saleProblem, unknownProduct, type SaleErrorCode } from './errors.js';
export { Sale, type Purchase, type PurchaseRequest } from './sale.js';
export {
  readProductState,
  seedProduct,
  type ProductState,
  type SeedResult,
  type SeedSpec,
} from './seeding.js';

export interface Inventory {
  keys: Keys;
  pubsub: PubSub;
  locks: LockClient;
  catalog: Catalog;
  sale: Sale;
  close(): Promise<void>;
}

export function promSaleMetrics(registry: Registry): SaleMetrics {
  const results = new Counter({
    name: 'seckill_purchases_total',
    help: 'Purchase attempts by result (accepted or the refusal code) and strategy',
    labelNames: ['result', 'strategy'],
    registers: [registry],
  });
  return { result: (result, strategy) => results.inc({ result, strategy }) };
}

export function createInventory(o: {
  config: Config;
  redis: Redis;
  logger?: Logger;
  registry?: Registry;
}): Inventory {
  const { config } = o;
  const keys = new Keys(config.redis.keyPrefix);
  const subscriber = createRedis(config.redis.url, {
    name: 'seckill-sub',
    role: 'subscriber',
    ...(o.logger && { logger: o.logger }),
    // Connects on the first subscription: CLI commands (migrate, seed, reconcile) never open it.
    overrides: { lazyConnect: true },
  });
  const pubsub = new PubSub(subscriber);
  const locks = new LockClient({
    redis: o.redis,
    pubsub,
    keys,
    watchdogTimeoutMs: config.lock.watchdogTimeoutMs,
    ...(o.registry && { metrics: promLockMetrics(o.registry) }),
  });
  const catalog = new Catalog({
    redis: o.redis,
    pubsub,
    keys,
    ...(o.logger && { logger: o.logger }),
  });
  const sale = new Sale({
    redis: o.redis,
    keys,
    catalog,
    locks,
    lockWaitMs: config.lock.waitMs,
    lockLeaseMs: config.lock.leaseMs,
    localGate: config.lock.localQueue,
    ...(o.logger && { logger: o.logger }),
    ...(o.registry && { metrics: promSaleMetrics(o.registry) }),
  });
  return {
    keys,
    pubsub,
    locks,
    catalog,
    sale,
    async close() {
      catalog.close();
      await locks.close();
      pubsub.close();
      await closeRedis(subscriber);
    },
  };
}
