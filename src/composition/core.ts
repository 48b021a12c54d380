/**
 * The composition root's first half, shared by every process role: config -> connections ->
 * inventory -> the read-side services. Each part registers its close with the lifecycle as it is
 * made, so shutdown runs in reverse.
 */
import type { Config } from '../config/index.js';
import { AuditRepository } from '../db/audit-repository.js';
import { createDb, pingDb, type Db } from '../db/index.js';
import type { ReadinessCheck } from '../http/routes/health.js';
import {
  createInventory,
  OrderStore,
  PendingOrderStore,
  ProductStore,
  type Inventory,
} from '../inventory/index.js';
import { Lifecycle } from '../lifecycle.js';
import type { Logger } from '../log.js';
import { createRegistry, type Registry } from '../metrics.js';
import { closeRedis, createRedisClient, pingRedis, type RedisClient } from '../redis/connection.js';
import { Keys } from '../redis/keys.js';
import { OrdersRepository, reconcile } from '../orders/index.js';
import { EndpointsRepository, EventsRepository, LanesRepository } from '../events/index.js';
import { OrderFeed, OrderLookup, Products, WebhookEndpoints } from '../services/index.js';

export interface Core {
  config: Config;
  logger: Logger;
  lifecycle: Lifecycle;
  registry: Registry;
  /** the command connection (request path: fails fast while Redis is away) */
  redis: RedisClient;
  db: Db;
  keys: Keys;
  inventory: Inventory;
  /** a product's sale in Redis: seeding and state */
  productStore: ProductStore;
  /** orders sold but not yet persisted (only in Redis) */
  pendingOrders: PendingOrderStore;
  products: Products;
  orders: OrderLookup;
  /** the orders and their events, to read */
  feed: OrderFeed;
  /** the webhook endpoints the admin registers (their deliveries run in the worker role) */
  webhooks: WebhookEndpoints;
  readiness: ReadinessCheck[];
  /** the Redis side of order persistence (outboxes, claims, returns, reconciliation reads) */
  orderStore: OrderStore;
  /** the order rows */
  orderRows: OrdersRepository;
  /** A new connection for BullMQ (each Queue and Worker needs its own; closed at shutdown). */
  bullConnection(name: string): RedisClient;
}

export function createCore(
  config: Config,
  logger: Logger,
  lifecycle = new Lifecycle(logger),
): Core {
  // every process of the product builds its core once, at start: the one place all of them pass
  for (const warning of config.deprecations) logger.warn(warning);
  const registry = createRegistry();
  const keys = new Keys(config.redis.keyPrefix);
  const redis = createRedisClient(config.redis, {
    name: 'seckill',
    logger,
    commandTimeoutMs: config.redis.commandTimeoutMs,
  });
  lifecycle.add('redis', () => closeRedis(redis));
  const db = createDb(config.postgres.url, {
    logger,
    connectTimeoutMs: config.postgres.connectTimeoutMs,
    statementTimeoutMs: config.postgres.statementTimeoutMs,
  });
  lifecycle.add('postgres pool', () => db.destroy());
  // Connects on its first subscription: CLI commands (migrate, seed, reconcile) never open it.
  const subscriber = createRedisClient(config.redis, {
    name: 'seckill-sub',
    role: 'subscriber',
    logger,
    overrides: { lazyConnect: true },
  });
  lifecycle.add('redis subscriber', () => closeRedis(subscriber));
  // Readiness pings on a connection of its own: behind thousands of sale commands a probe would
  // wait its turn on the command connection, and a ping must not share a connection whose
  // replies are in doubt after a timeout.
  const probe = createRedisClient(config.redis, {
    name: 'seckill-probe',
    logger,
    commandTimeoutMs: 1_000,
    overrides: { lazyConnect: true },
  });
  lifecycle.add('redis probe', () => closeRedis(probe));
  const inventory = createInventory({
    redis,
    subscriber,
    keys,
    lock: {
      watchdogTimeoutMs: config.lock.watchdogTimeoutMs,
      localQueue: config.lock.localQueue,
      waitMs: config.lock.waitMs,
      leaseMs: config.lock.leaseMs,
      queueMs: config.lock.queueMs,
    },
    logger,
    registry,
    waitReplicas: config.redis.waitReplicas,
    memoryShedAt: config.redis.memoryShedAt,
  });
  lifecycle.add('inventory', () => inventory.close());
  const productStore = new ProductStore({ redis, keys, db, catalogue: inventory.catalogue });
  const pendingOrders = new PendingOrderStore(redis, keys);
  const orderStore = new OrderStore(redis, keys, inventory.replicaWait);
  const orderRows = new OrdersRepository(db);
  return {
    config,
    logger,
    lifecycle,
    registry,
    redis,
    db,
    keys,
    inventory,
    productStore,
    pendingOrders,
    products: new Products({
      inventory: productStore,
      persistedBySegment: (productId, epoch) => orderRows.persistedBySegment(productId, epoch),
      reconcile: (productId) => reconcile({ store: orderStore, rows: orderRows }, productId),
    }),
    orders: new OrderLookup({
      pending: pendingOrders,
      rows: orderRows,
    }),
    feed: new OrderFeed({ events: new EventsRepository(db), orders: orderRows }),
    webhooks: new WebhookEndpoints({
      endpoints: new EndpointsRepository(db),
      lanes: new LanesRepository(db),
      rules: config.events.webhook,
      audit: new AuditRepository(db),
      onAuditLost: (err) =>
        logger.warn(
          { err },
          'a webhook endpoint change ran; its outcome was not written to the audit log',
        ),
    }),
    readiness: [
      { name: 'redis', check: () => pingRedis(probe) },
      { name: 'postgres', check: () => pingDb(db) },
    ],
    orderStore,
    orderRows,
    bullConnection(name) {
      const connection = createRedisClient(config.redis, { name, role: 'bullmq', logger });
      lifecycle.add(name, () => closeRedis(connection));
      return connection;
    },
  };
}
