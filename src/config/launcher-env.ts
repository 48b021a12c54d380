/**
 * The variables of the local stack `seckill up` runs (its Redis, PostgreSQL, storefront and demo
 * sale). Part of env.ts's schema.
 */
import { z } from 'zod';
import { bool, port, positiveInt } from './env-types.js';

export const launcherEnv = {
  DATA_DIR: z
    .string()
    .min(1)
    .default('.seckill')
    .describe(
      'where `up` keeps the Redis AOF, the PostgreSQL cluster, their logs and the admin token (git-ignored); one `up` per folder',
    ),
  LOCAL_REDIS_PORT: port
    .default(6380)
    .describe(
      'port of the redis-server `up` runs (a local cluster: its nodes from here up, then their bus ports)',
    ),
  LOCAL_REDIS_SHARDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(32)
    .default(1)
    .describe(
      '`1`: one redis-server; `3` or more (up to 32): `up` runs a local Redis Cluster of that many masters',
    ),
  LOCAL_REDIS_REPLICAS: z.coerce
    .number()
    .int()
    .min(0)
    .max(2)
    .default(0)
    .describe(
      'replicas per master of that local cluster (0-2); a node that dies is restarted and rejoins as a replica',
    ),
  LOCAL_REDIS_MAXMEMORY: z
    .string()
    .regex(/^[1-9][0-9]*(kb|mb|gb)?$/i, 'bytes, or a size like 512mb or 2gb')
    .default('1gb')
    .describe(
      '`maxmemory` of each local redis-server (noeviction: past it only the sale writes, [catalogue.md](catalogue.md#redis-memory))',
    ),
  LOCAL_PG_PORT: port.default(5433).describe('port of the PostgreSQL `up` runs'),
  STOREFRONT_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(3080)
    .describe(
      'port `up` serves the storefront example on, an origin of its own; `up` then allows it (`CORS_ORIGINS`, unless given); `0`: none',
    ),
  PATH: z
    .string()
    .default('/usr/local/bin:/usr/bin:/bin')
    .describe(
      'where `up` looks for `redis-server`; PostgreSQL is also looked for in `/usr/lib/postgresql/*/bin`',
    ),
  AUTO_INSTALL: bool
    .default(true)
    .describe(
      'let `up` apt-get a missing redis-server / postgresql when root on Debian/Ubuntu (elsewhere it prints the install line and stops)',
    ),
  DEMO_PRODUCT_ID: z
    .string()
    .default('demo')
    .describe('product `up` seeds for a demo sale (once: an existing product is left alone)'),
  DEMO_STOCK: positiveInt
    .default(100)
    .describe('units of that demo sale (over 4 segments, 1 per shopper)'),
};
