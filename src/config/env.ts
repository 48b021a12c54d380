/**
 * Every environment variable the product reads: its zod schema (type, default, description;
 * docs/configuration.md and .env.example are written from it), and the rules across variables.
 */
import { z } from 'zod';
import { originProblem } from './origins.js';
import { plainHttpAcrossNetwork, url } from './urls.js';
import { doorEnv } from './door.js';
import { eventsEnv } from './events.js';
import { paymentsEnv } from './payments.js';
import { launcherEnv } from './launcher-env.js';
import { limitsEnv } from './limits-env.js';
import { bool, ms, port, positiveInt } from './env-types.js';
import { queuePageEnv } from './queue-page.js';
import { drawEnv } from './draw.js';

/** Every variable the product reads, with its default and what it does (docs/configuration.md). */
export const envSchema = z.object({
  NODE_ENV: z
    .enum(['development', 'production', 'test'])
    .default('development')
    .describe('`development`, `production` or `test`; production refuses `AUTH_MODE=dev`'),
  HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('interface the API listens on (`0.0.0.0` in containers)'),
  PORT: port.default(3000).describe('port the API listens on'),
  WORKER_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(3001)
    .describe(
      '`seckill worker` serves `/healthz`, `/readyz` and `/metrics` here (`0`: none; `up` serves them on `PORT`)',
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe(
      'pino level: fatal, error, warn, info, debug, trace, silent; `debug` adds the stack of an unplanned CLI error',
    ),

  REDIS_URL: url(['redis:', 'rediss:'], 'redis://localhost:6379')
    .optional()
    .describe(
      'Redis to use (`redis://` or `rediss://`); unset means `redis://127.0.0.1:$LOCAL_REDIS_PORT`, which `up` starts',
    ),
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(
      /^[A-Za-z0-9_.-]+:\d{1,5}(,[A-Za-z0-9_.-]+:\d{1,5})*$/,
      'must be host:port[,host:port...]',
    )
    .optional()
    .describe(
      'a Redis Cluster to use instead: `host:port,host:port,...` (some of its nodes); not together with `REDIS_URL`',
    ),
  REDIS_WAIT_REPLICAS: z.coerce
    .number()
    .int()
    .min(0)
    .max(5)
    .default(0)
    .describe(
      'durable mode (0-5): an accepted purchase waits (`WAIT`) until this many replicas hold its outbox entry before the 202 ([scale-out.md](scale-out.md))',
    ),
  DATABASE_URL: url(['postgres:', 'postgresql:'], 'postgres://user@localhost:5432/seckill')
    .optional()
    .describe(
      'PostgreSQL to use; unset means `postgres://seckill@127.0.0.1:$LOCAL_PG_PORT/seckill`',
    ),

  API_PROCESSES: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(1)
    .describe(
      'HTTP processes serving one port (`node:cluster`); `up` runs the order workers in the primary ([scale-out.md](scale-out.md))',
    ),

  KEY_PREFIX: z
    .string()
    .regex(/^[a-z0-9_-]{1,16}$/, 'must be 1-16 of a-z 0-9 _ -')
    .default('sk')
    .describe('prefix of every Redis key the product owns (1-16 of `a-z 0-9 _ -`)'),
  QUEUE_PREFIX: z
    .string()
    .regex(/^\{[a-z0-9_-]{1,32}\}$/, 'must be a hash tag like {skq}')
    .default('{skq}')
    .describe('BullMQ key prefix; a hash tag, so each queue lives in one Redis Cluster slot'),

  AUTH_MODE: z
    .enum(['jwt', 'dev'])
    .default('jwt')
    .describe(
      '`jwt`: shopper id from a verified bearer token (JWT); `dev`: trust the `X-User-Id` header ([api.md](api.md#identity))',
    ),
  JWT_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe(
      'HS256 secret, at least 32 characters; `AUTH_MODE=jwt` needs this or `JWT_JWKS_URL` (or both)',
    ),
  JWT_JWKS_URL: url(['https:', 'http:'], 'https://id.example/.well-known/jwks.json')
    .refine((text) => !plainHttpAcrossNetwork(text), {
      message:
        'plain http is only for a provider on this machine (localhost, 127.0.0.0/8, [::1]): use https, since whoever can change the keys on the way can sign any shopper in',
    })
    .optional()
    .describe(
      "the identity provider's published keys (a JWKS URL): tokens signed RS256, ES256 or EdDSA; needs `JWT_ISSUER` and `JWT_AUDIENCE`; https (plain http only to loopback: `localhost`, `127.0.0.0/8`, `[::1]`); read up to 256 KiB ([api.md](api.md#identity))",
    ),
  JWT_ISSUER: z.string().min(1).optional().describe('when set, tokens must carry this `iss`'),
  JWT_AUDIENCE: z.string().min(1).optional().describe('when set, tokens must carry this `aud`'),
  ADMIN_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'bearer token of the admin API, at least 16 characters; unset, `/admin/*` answers 403; `up` keeps one in `DATA_DIR/admin-token`',
    ),

  REDIS_MEMORY_SHED_AT: z.coerce
    .number()
    .gt(0)
    .max(1)
    .default(0.9)
    .describe(
      "share of a Redis master's `maxmemory` from which new waiting-room places (`503 room-store-full`) and refusals' Idempotency-Key records give way, so the sale writes on ([catalogue.md](catalogue.md#redis-memory))",
    ),
  REDIS_COMMAND_TIMEOUT_MS: ms
    .default(2_000)
    .describe(
      'a Redis command unanswered this long once sent fails (a purchase answers 503 with its order id) and its connection reconnects',
    ),
  PG_CONNECT_TIMEOUT_MS: ms
    .default(2_000)
    .describe('longest wait for a PostgreSQL connection (then 503)'),
  PG_STATEMENT_TIMEOUT_MS: ms
    .default(5_000)
    .describe(
      'a PostgreSQL statement running, or unanswered, this long fails (server `statement_timeout` and client timeout; migrations too)',
    ),

  LISTEN_BACKLOG: positiveInt
    .max(65_535)
    .default(4_096)
    .describe(
      "connections the kernel queues for the API before it accepts them (capped by `net.core.somaxconn`): a sale's first burst must not overflow it",
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
      "origins whose pages may call the shop's routes from a browser, comma-separated, each exactly as a browser sends it (`https://shop.example`, `http://127.0.0.1:3080`); no wildcard (`https://*.shop.example` is refused at start: list each); never `/admin`; unset: no CORS answer at all",
    ),
  CORS_CREDENTIALS: bool
    .default(false)
    .describe(
      "the CORS answers allow credentials (cookies, HTTP authentication) to those origins, on the shop's routes only",
    ),
  CORS_MAX_AGE_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(600)
    .describe(
      "how long a browser may reuse a preflight's answer (`Access-Control-Max-Age`; Chromium keeps at most 7200)",
    ),
  FAST_PATH: bool
    .default(true)
    .describe(
      'answer `/healthz`, `/readyz` and `POST /seckill` (small JSON bodies) ahead of Express: the same answers for less CPU ([design/sale.md](design/sale.md#the-fast-path)); `false`: every request goes through Express',
    ),
  SHUTDOWN_TIMEOUT_MS: ms
    .default(10_000)
    .describe('a shutdown that takes longer is forced (exit 1)'),
  DRAIN_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(600_000)
    .default(0)
    .describe(
      'on SIGTERM, `/readyz` answers `503 draining` this long while requests are still served, then the API closes (Kubernetes: a few probe periods, e.g. `5000`); shorter than `SHUTDOWN_TIMEOUT_MS`',
    ),
  WATCHDOG_TIMEOUT_MS: ms
    .min(300)
    .default(30_000)
    .describe('lease of a lock taken without `leaseMs` (at least 300); renewed every third of it'),
  LOCK_WAIT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(100)
    .describe(
      'how long a purchase waits for a segment lock before trying another segment (`503 lock-timeout` when none comes)',
    ),
  LOCK_QUEUE_MS: ms
    .default(2_000)
    .describe(
      "longest wait in the process's own line for a segment lock; `LOCK_WAIT_MS` counts from when the purchase reaches its head",
    ),
  LOCK_LEASE_MS: ms.default(2_000).describe('lease of a segment lock held around one deduct'),
  LOCK_LOCAL_QUEUE: bool
    .default(true)
    .describe(
      'requests of one process for the same segment lock queue in memory first; only one per process waits on Redis',
    ),
  IDEMPOTENCY_TTL_SECONDS: positiveInt
    .default(86_400)
    .describe('how long an `Idempotency-Key` and its stored response are kept'),
  IDEMPOTENCY_LEASE_MS: ms
    .min(1_000)
    .default(10_000)
    .describe(
      'a purchase without an answer this long is taken for dead (its process died): its `Idempotency-Key` is resolved by the next retry, and a spill claim it left open is settled by the sweeper',
    ),
  IDEMPOTENCY_MAX_PER_USER: positiveInt
    .max(100_000)
    .default(100)
    .describe(
      "`Idempotency-Key` records one shopper may hold per product, besides their home sales' (the per-user limit bounds those); past it their oldest final refusals go, else `429` ([catalogue.md](catalogue.md))",
    ),

  ENQUEUE_BATCH_SIZE: positiveInt
    .max(5_000)
    .default(200)
    .describe('orders per BullMQ job handed over by the API'),
  ENQUEUE_MAX_DELAY_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5)
    .describe('longest an order waits in the API before its batch is enqueued'),
  WORKER_CONCURRENCY: positiveInt
    .max(256)
    .default(4)
    .describe('jobs a worker process handles at once'),
  WORKER_BATCH_SIZE: positiveInt
    .max(5_000)
    .default(500)
    .describe('most orders written by one INSERT'),
  WORKER_LOCK_MS: ms
    .min(1_000)
    .default(30_000)
    .describe(
      'a job whose worker stopped renewing its lock this long (a crashed worker) is handed to another',
    ),
  SWEEP_INTERVAL_MS: ms
    .default(5_000)
    .describe('how often the sweeper looks for outbox entries and claims left behind'),
  SWEEP_MIN_AGE_MS: ms
    .default(10_000)
    .describe('outbox entries older than this are re-enqueued by the sweeper'),
  RETURN_FREES_LIMIT: bool
    .default(true)
    .describe(
      'a buyer whose order was cancelled, expired or refunded (its units back on sale) may buy again (its units no longer count against the limit)',
    ),
  ...paymentsEnv,

  SALE_TOKEN_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe(
      'HMAC key of sale tokens, at least 32 characters; needed by products seeded with `requireSaleToken` or a waiting room; `up` keeps one in `DATA_DIR/sale-token-secret`',
    ),
  SALE_TOKEN_TTL_S: positiveInt
    .max(3_600)
    .default(60)
    .describe(
      'a sale token is valid this long from the start (or from its issue, once the sale runs)',
    ),
  SALE_TOKEN_LEAD_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400)
    .default(300)
    .describe('sale tokens are issued from this long before the start'),
  ROOM_LEASE_MS: ms
    .min(500)
    .default(3_000)
    .describe(
      "a waiting room admitter's lease (this project's lock, watchdog-renewed): another API process takes a killed admitter's rooms over within it",
    ),
  ROOM_TICK_MS: ms
    .min(20)
    .max(1_000)
    .default(100)
    .describe(
      "how often the admitter of a room admits (the pace itself is the room's `admitPerSecond`)",
    ),
  ROOM_RECHECK_MS: ms
    .min(100)
    .default(5_000)
    .describe(
      'a room asleep with shoppers in line (every seat taken, sold out, paused) is looked at this often anyway, in case the notice that would wake it (a freed seat, a return, a resume) was lost; a room asleep with nobody in line is not ([waiting-room.md](waiting-room.md#what-it-costs-redis))',
    ),
  ROOM_MAX_PLACES: positiveInt
    .max(100_000_000)
    .default(500_000)
    .describe(
      "places one waiting room's line holds; a new shopper past it gets `409 room-full` (a place is ~140 bytes of Redis at a 13-character shopper id, ~450 at the longest: [waiting-room.md](waiting-room.md#memory))",
    ),
  ROOM_EXPIRING_LEAD_S: z.coerce
    .number()
    .int()
    .min(0)
    .max(3_600)
    .default(30)
    .describe(
      'an admitted shopper hears that their turn runs out this long before it does (0: never)',
    ),
  ...doorEnv,

  BENCH_ROUTES: bool
    .default(false)
    .describe(
      "mount `POST /bench/noop` (the shop's middleware, validation and auth, no Redis): the benchmark ceiling",
    ),
  ...limitsEnv,
  ...launcherEnv,
  ...eventsEnv,
  ...queuePageEnv,
  ...drawEnv,
});

export { clusterPortSpan, crossFieldProblems } from './cross-field.js';

export type Env = z.output<typeof envSchema>;
