/**
 * The shared parts of a process (serve, worker, up): logger, metrics registry, Redis command
 * connection, PostgreSQL pool, the inventory (subscriber, locks, catalog, sale). Each registers its own close with the lifecycle.
 */
import type { Config } from './config/index.js';
import { createDb, pingDb, type Db } from './db/index.js';
import type { ReadinessCheck } from './http/health.js';
import { createInventory, type Inventory } from './inventory/index.js';
import { Lifecycle } from './lifecycle.js';
import type { Logger } from './log.js';
import { createRegistry, type Registry } from './metrics.js';
import { closeRedis, createRedis, pingRedis, type Redis } from './redis/connection.js';

export interface Runtime {
  config: Config;
  logger: Logger;
  registry: Registry;
  redis: Redis;
  db: Db;
  inventory: Inventory;
  lifecycle: Lifecycle;
  readiness: ReadinessCheck[];
}

export function createRuntime(
  config: Config,
  logger: Logger,
  lifecycle = new Lifecycle(logger),
): Runtime {
  const registry = createRegistry();
  const redis = createRedis(config.redis.url, { name: 'seckill', logger });
  lifecycle.add('redis', () => closeRedis(redis));
  const db = createDb(config.postgres.url, { logger });
  lifecycle.add('postgres pool', () => db.destroy());
  const inventory = createInventory({ config, redis, logger, registry });
  lifecycle.add('inventory', () => inventory.close());
  return {
    inventory,
    config,
    logger,
    registry,
    redis,
    db,
    lifecycle,
    readiness: [
      { name: 'redis', check: () => pingRedis(redis) },
      { name: 'postgres', check: () => pingDb(db) },
    ],
  };
}
