/**
 * Each test file works in its own namespace: a random Redis key prefix and BullMQ prefix, and
 * its own PostgreSQL database cloned from the migrated template (dropped afterwards).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { loadConfig, NO_RATE_LIMITS, type Config } from '../../src/config/index.js';
import type { RedisTarget } from '../../src/redis/connection.js';

export interface TestNamespace {
  /** Unique per file: the Redis key prefix, also used in product and queue names. */
  id: string;
  redisUrl: string;
  /** where the product's Redis is: one server, or (the cluster project) a Redis Cluster */
  redisTarget: RedisTarget;
  /** true in the cluster project */
  clustered: boolean;
  databaseUrl: string;
  adminToken: string;
  /** A config for this namespace; `env` overrides any variable. */
  config(env?: Record<string, string>): Config;
}

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789';

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${inject('postgresServerUrl')}/postgres` });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Registers beforeAll/afterAll hooks that create and drop this file's database. */
export function useNamespace(): TestNamespace {
  const id = `t${randomBytes(4).toString('hex')}`;
  const database = `seckill_${id}`;
  const clusterNodes = inject('redisClusterNodes');
  const ns: TestNamespace = {
    id,
    redisUrl: inject('redisUrl'),
    clustered: clusterNodes !== '',
    redisTarget: {
      url: inject('redisUrl'),
      cluster: clusterNodes
        ? clusterNodes.split(',').map((hp) => {
            const [host, port] = hp.split(':');
            return { host: host!, port: Number(port) };
          })
        : undefined,
    },
    databaseUrl: `${inject('postgresServerUrl')}/${database}`,
    adminToken: TEST_ADMIN_TOKEN,
    config: (env = {}) =>
      loadConfig({
        // a test that brings its own REDIS_URL gets that one Redis, whatever the project
        ...(env.REDIS_URL || env.REDIS_CLUSTER_NODES
          ? {}
          : clusterNodes
            ? { REDIS_CLUSTER_NODES: clusterNodes }
            : { REDIS_URL: ns.redisUrl }),
        DATABASE_URL: ns.databaseUrl,
        KEY_PREFIX: id,
        QUEUE_PREFIX: `{${id}q}`,
        AUTH_MODE: 'dev',
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        // the product's own defaults limit requests per shopper and address: every test client
        // here is one address (127.0.0.1), so a file turns on the limits it tests
        ...NO_RATE_LIMITS,
        ...env,
      }),
  };
  beforeAll(async () => {
    await adminQuery(`create database ${database} template ${inject('templateDatabase')}`);
  });
  afterAll(async () => {
    await adminQuery(`drop database if exists ${database} with (force)`);
  });
  return ns;
}
