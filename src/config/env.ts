/**
 * Every environment variable the product reads: its zod schema (type, default, description; the
 * table in docs/configuration.md lists the same), and the rules across variables.
 */
import { z } from 'zod';
import { rate, rateOrOff } from './rate.js';
import { originProblem } from './origins.js';
import { plainHttpAcrossNetwork, url } from './urls.js';
import { doorEnv } from './door.js';
import { eventsEnv } from './events.js';
import { paymentsEnv } from './payments.js';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(1).max(65535);
const ms = z.coerce.number().int().min(1);
const positiveInt = z.coerce.number().int().min(1);
const shuffleSeed = z.coerce.number().int().min(1).max(2_147_483_646);

/** Every variable the product reads, with its default and what it does (docs/configuration.md). */
export const envSchema = z.object({
  NODE_ENV: z
    .enum(['development', 'production', 'test'])
    .default('development')
    .describe('development | production | test'),
  HOST: z.string().min(1).default('127.0.0.1').describe('interface the API listens on'),
  PORT: port.default(3000).describe('port the API listens on'),
  WORKER_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(3001)
    .describe('port `seckill worker` serves /healthz, /readyz and /metrics on (0: none)'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level'),

  REDIS_URL: url(['redis:', 'rediss:'], 'redis://localhost:6379')
    .optional()
    .describe('Redis to use; when unset, the local one the launcher runs'),
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(
      /^[A-Za-z0-9_.-]+:\d{1,5}(,[A-Za-z0-9_.-]+:\d{1,5})*$/,
      'must be host:port[,host:port...]',
    )
    .optional()
    .describe('a Redis Cluster to use (some of its nodes); instead of REDIS_URL'),
  REDIS_WAIT_REPLICAS: z.coerce
    .number()
    .int()
    .min(0)
    .max(5)
    .default(0)
    .describe('durable mode: a sale waits for this many replicas (WAIT) before its 202'),
  DATABASE_URL: url(['postgres:', 'postgresql:'], 'postgres://user@localhost:5432/seckill')
    .optional()
    .describe('PostgreSQL to use; when unset, the local one the launcher runs'),

  DATA_DIR: z.string().min(1).default('.seckill').describe('launcher data folder (git-ignored)'),
  LOCAL_REDIS_PORT: port.default(6380).describe('port of the launcher-run redis-server'),
  LOCAL_REDIS_SHARDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(32)
    .default(1)
    .describe('1: one redis-server; 3 and more: a local Redis Cluster of that many masters'),
  LOCAL_REDIS_REPLICAS: z.coerce
    .number()
    .int()
    .min(0)
    .max(2)
    .default(0)
    .describe('replicas of each master of the local Redis Cluster'),
  LOCAL_REDIS_MAXMEMORY: z
    .string()
    .regex(/^[1-9][0-9]*(kb|mb|gb)?$/i, 'bytes, or a size like 512mb or 2gb')
    .default('1gb')
    .describe(
      'maxmemory of each local redis-server (noeviction: past it writes fail, so alert first)',
    ),
  API_PROCESSES: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(1)
    .describe('HTTP processes serving one port (node:cluster)'),
  LOCAL_PG_PORT: port.default(5433).describe('port of the launcher-run PostgreSQL'),
  STOREFRONT_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(3080)
    .describe('port `up` serves the storefront example on, an origin of its own (0: none)'),
  PATH: z
    .string()
    .default('/usr/local/bin:/usr/bin:/bin')
    .describe('where the launcher looks for binaries'),
  AUTO_INSTALL: bool
    .default(true)
    .describe('launcher may apt-get missing redis-server/postgresql when root on Debian'),

  KEY_PREFIX: z
    .string()
    .regex(/^[a-z0-9_-]{1,16}$/, 'must be 1-16 of a-z 0-9 _ -')
    .default('sk')
    .describe('prefix of every Redis key the product owns'),
  QUEUE_PREFIX: z
    .string()
    .regex(/^\{[a-z0-9_-]{1,32}\}$/, 'must be a hash tag like {skq}')
    .default('{skq}')
    .describe('BullMQ prefix; a hash tag so a queue lives in one Redis Cluster slot'),

  AUTH_MODE: z
    .enum(['jwt', 'dev'])
    .default('jwt')
    .describe('jwt: shopper id from a verified bearer token (JWT); dev: trust X-User-Id'),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  JWT_JWKS_URL: url(['https:', 'http:'], 'https://id.example/.well-known/jwks.json')
    .refine((text) => !plainHttpAcrossNetwork(text), {
      message:
        'plain http is only for a provider on this machine (localhost, 127.0.0.0/8, [::1]): use https, since whoever can change the keys on the way can sign any shopper in',
    })
    .optional()
    .describe(
      "the identity provider's published keys (JWKS): tokens signed RS256, ES256 or EdDSA; https (http only to loopback)",
    ),
  JWT_ISSUER: z.string().min(1).optional(),
  JWT_AUDIENCE: z.string().min(1).optional(),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  ADMIN_GUESS_LIMIT: rate
    .default('10/m')
    .describe(
      'wrong admin tokens (bearer or dashboard login) per client address, bursts of n; past it every attempt from there gets 429',
    ),

  REDIS_MEMORY_SHED_AT: z.coerce
    .number()
    .gt(0)
    .max(1)
    .default(0.9)
    .describe(
      "share of maxmemory from which new waiting-room places and refusals' Idempotency-Key records are refused (the sale writes on)",
    ),
  REDIS_COMMAND_TIMEOUT_MS: ms
    .default(2_000)
    .describe('a Redis command unanswered this long once sent fails (its connection reconnects)'),
  PG_CONNECT_TIMEOUT_MS: ms.default(2_000).describe('longest wait for a PostgreSQL connection'),
  PG_STATEMENT_TIMEOUT_MS: ms
    .default(5_000)
    .describe('a PostgreSQL statement running (or unanswered) this long fails'),

  BODY_LIMIT_BYTES: positiveInt.max(1_048_576).default(16_384),
  LISTEN_BACKLOG: positiveInt
    .max(65_535)
    .default(4_096)
    .describe(
      'connections the kernel queues for the API before it accepts them (capped by net.core.somaxconn)',
    ),
  HTTP_REQUEST_TIMEOUT_MS: ms
    .min(1_000)
    .max(300_000)
    .default(10_000)
    .describe(
      "a request's headers and body must arrive within this; past it the connection gets 408 and is closed (checked about every second)",
    ),
  MAX_UNREAD_BODIES_PER_ADDRESS: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(64)
    .describe(
      'request bodies one client address (the peer) may have half-sent at once; past it the oldest of them is ended with 408; 0: no bound',
    ),
  CORS_ORIGINS: z
    .string()
    .superRefine((text, ctx) => {
      for (const o of text.split(',').map((x) => x.trim())) {
        const bad = originProblem(o);
        if (bad) ctx.addIssue({ code: 'custom', message: bad });
      }
    })
    .optional()
    .describe(
      "origins whose pages may call the shop's routes from a browser (CORS; never /admin), comma-separated, each in full (no wildcard), e.g. https://shop.example; unset: none",
    ),
  CORS_CREDENTIALS: bool
    .default(false)
    .describe(
      "CORS answers allow credentials (cookies, HTTP auth) for the allowed origins, on the shop's routes only",
    ),
  CORS_MAX_AGE_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(600)
    .describe('how long a browser may keep a preflight answer (Chromium keeps at most 7200)'),
  FAST_PATH: bool
    .default(true)
    .describe('answer the probes and POST /seckill ahead of Express (same answers, less CPU)'),
  SHUTDOWN_TIMEOUT_MS: ms.default(10_000),
  DRAIN_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(600_000)
    .default(0)
    .describe(
      'on SIGTERM, /readyz answers 503 this long while requests are still served, then the API closes',
    ),
  WATCHDOG_TIMEOUT_MS: ms.min(300).default(30_000),
  LOCK_WAIT_MS: z.coerce.number().int().min(0).default(100),
  LOCK_QUEUE_MS: ms
    .default(2_000)
    .describe("longest wait in the process's line for a segment lock, before LOCK_WAIT_MS starts"),
  LOCK_LEASE_MS: ms.default(2_000),
  LOCK_LOCAL_QUEUE: bool
    .default(true)
    .describe("queue a process's requests for a segment lock in memory before Redis"),
  CLAIM_TTL_MS: ms.default(10_000),
  IDEMPOTENCY_TTL_SECONDS: positiveInt.default(86_400),
  IDEMPOTENCY_LEASE_MS: ms
    .min(1_000)
    .default(10_000)
    .describe('an Idempotency-Key whose request has run this long without an answer is resolved'),
  IDEMPOTENCY_MAX_PER_USER: positiveInt
    .max(100_000)
    .default(100)
    .describe('records a shopper may hold per product; past it their oldest refusals go, else 429'),

  ENQUEUE_BATCH_SIZE: positiveInt.max(5_000).default(200),
  ENQUEUE_MAX_DELAY_MS: z.coerce.number().int().min(0).default(5),
  WORKER_CONCURRENCY: positiveInt.max(256).default(4),
  WORKER_BATCH_SIZE: positiveInt.max(5_000).default(500),
  WORKER_LOCK_MS: ms.min(1_000).default(30_000),
  SWEEP_INTERVAL_MS: ms.default(5_000),
  SWEEP_MIN_AGE_MS: ms.default(10_000),
  RETURN_FREES_LIMIT: bool
    .default(true)
    .describe(
      'a buyer whose order was cancelled, expired or refunded (its units back on sale) may buy again (the units count no more)',
    ),
  ...paymentsEnv,

  RATE_LIMIT_USER: rateOrOff
    .default('5/s')
    .describe(
      'requests per shopper on POST /seckill, the sale-token route and waiting-room joins (each its own bucket): <n>/s or <n>/m; off: none',
    ),
  RATE_LIMIT_USER_BURST: positiveInt
    .max(1_000_000)
    .optional()
    .describe('requests a shopper may send at once (default: the rate)'),
  RATE_LIMIT_ORDERS: rate
    .default('20/s')
    .describe(
      'requests per shopper on GET /orders/:id, its pay and cancel routes (bursts of n; an admin reading is not limited)',
    ),
  RATE_LIMIT_IP: rateOrOff
    .default('200/s')
    .describe('requests per client address on the same routes (each its own bucket); off: none'),
  RATE_LIMIT_IP_BURST: positiveInt
    .max(1_000_000)
    .optional()
    .describe('requests a client address may send at once (default: the rate)'),
  RATE_LIMIT_POLL_IP: rateOrOff
    .default('100/s')
    .describe('waiting-room polls per client address and API process, in memory; off: none'),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d{1,2}|[\w.:/, -]+)$/, 'must be true, false, a hop count or addresses')
    .default('false')
    .describe('Express "trust proxy": whose X-Forwarded-For names the client address'),
  MAX_INFLIGHT: z.coerce
    .number()
    .int()
    .min(0)
    .default(2_000)
    .describe(
      'requests one API process works on at once; past it 503 before any Redis call (0: no cap)',
    ),
  SALE_TOKEN_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe('HMAC key of sale tokens (products seeded with requireSaleToken)'),
  SALE_TOKEN_TTL_S: positiveInt
    .max(3_600)
    .default(60)
    .describe('a sale token is valid this long from the start (or from its issue, once started)'),
  SALE_TOKEN_LEAD_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(300)
    .describe('sale tokens are issued from this long before the start'),
  ROOM_LEASE_MS: ms.min(500).default(3_000).describe('takeover time of a killed room admitter'),
  ROOM_TICK_MS: ms.min(20).max(1_000).default(100).describe('how often a waiting room admits'),
  ROOM_RECHECK_MS: ms.min(100).default(5_000).describe('how often a sleeping room is rechecked'),
  ROOM_MAX_PLACES: positiveInt
    .max(100_000_000)
    .default(500_000)
    .describe("places a waiting room's line holds; a new shopper past it gets 409 room-full"),
  ROOM_SHUFFLE_SEED: shuffleSeed.optional().describe('seed of the lobby shuffle (tests)'),
  ...doorEnv,

  BENCH_ROUTES: bool
    .default(false)
    .describe('mount POST /bench/noop: the shop middleware without Redis (the benchmark ceiling)'),
  DEMO_PRODUCT_ID: z.string().default('demo'),
  DEMO_STOCK: positiveInt.default(100),
  ...eventsEnv,
});

export { clusterPortSpan, crossFieldProblems } from './cross-field.js';

export type Env = z.output<typeof envSchema>;
