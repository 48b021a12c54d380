/**
 * The one place that reads the environment. `loadConfig()` parses an env object with a zod
 * schema, reports every bad variable at once, and returns a deeply frozen, typed config.
 * Components take their slice of it through their constructors.
 */
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(1).max(65535);
const ms = z.coerce.number().int().min(1);
const positiveInt = z.coerce.number().int().min(1);

const url = (protocols: string[]) =>
  z
    .string()
    .url()
    .refine((u) => protocols.includes(new URL(u).protocol), {
      message: `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`,
    });

/** Every variable the product reads, with its default and what it does (README lists the same). */
export const envSchema = z.object({
  NODE_ENV: z
    .enum(['development', 'production', 'test'])
    .default('development')
    .describe('development | production | test'),
  HOST: z.string().min(1).default('127.0.0.1').describe('interface the API listens on'),
  PORT: port.default(3000).describe('port the API listens on'),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level'),

  REDIS_URL: url(['redis:', 'rediss:'])
    .optional()
    .describe('Redis to use; when unset, the local one the launcher runs'),
  DATABASE_URL: url(['postgres:', 'postgresql:'])
    .optional()
    .describe('PostgreSQL to use; when unset, the local one the launcher runs'),

  DATA_DIR: z.string().min(1).default('.seckill').describe('launcher data folder (git-ignored)'),
  LOCAL_REDIS_PORT: port.default(6380).describe('port of the launcher-run redis-server'),
  LOCAL_PG_PORT: port.default(5433).describe('port of the launcher-run PostgreSQL'),
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
    .describe('jwt: shopper id from a verified HS256 bearer token; dev: trust X-User-Id'),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  JWT_ISSUER: z.string().min(1).optional(),
  JWT_AUDIENCE: z.string().min(1).optional(),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),

  REDIS_COMMAND_TIMEOUT_MS: ms
    .default(2_000)
    .describe('a Redis command without a reply this long fails (and its connection reconnects)'),
  PG_CONNECT_TIMEOUT_MS: ms.default(2_000).describe('longest wait for a PostgreSQL connection'),
  PG_STATEMENT_TIMEOUT_MS: ms
    .default(5_000)
    .describe('a PostgreSQL statement running (or unanswered) this long fails'),

  BODY_LIMIT_BYTES: positiveInt.max(1_048_576).default(16_384),
  SHUTDOWN_TIMEOUT_MS: ms.default(10_000),
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

  ENQUEUE_BATCH_SIZE: positiveInt.max(5_000).default(200),
  ENQUEUE_MAX_DELAY_MS: z.coerce.number().int().min(0).default(5),
  WORKER_CONCURRENCY: positiveInt.max(256).default(4),
  WORKER_BATCH_SIZE: positiveInt.max(5_000).default(500),
  WORKER_LOCK_MS: ms.min(1_000).default(30_000),
  SWEEP_INTERVAL_MS: ms.default(5_000),
  SWEEP_MIN_AGE_MS: ms.default(10_000),

  BENCH_ROUTES: bool
    .default(false)
    .describe('mount POST /bench/noop: the shop middleware without Redis (the benchmark ceiling)'),
  DEMO_PRODUCT_ID: z.string().default('demo'),
  DEMO_STOCK: positiveInt.default(100),
});

/**
 * Rules across variables. They read the raw strings so they are reported together with the
 * per-variable problems (zod skips refinements of an object that already failed).
 */
function crossFieldProblems(input: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const mode = input.AUTH_MODE ?? 'jwt';
  if (mode === 'jwt' && !input.JWT_SECRET) {
    problems.push('JWT_SECRET: required when AUTH_MODE=jwt (or set AUTH_MODE=dev for demos)');
  }
  if (input.NODE_ENV === 'production' && mode === 'dev') {
    problems.push(
      'AUTH_MODE: dev trusts the X-User-Id header and is refused when NODE_ENV=production',
    );
  }
  return problems;
}

type Env = z.output<typeof envSchema>;

export interface Config {
  readonly env: Env['NODE_ENV'];
  readonly http: { host: string; port: number; bodyLimitBytes: number; shutdownTimeoutMs: number };
  readonly log: { level: Env['LOG_LEVEL'] };
  readonly redis: {
    url: string;
    keyPrefix: string;
    queuePrefix: string;
    commandTimeoutMs: number;
  };
  readonly postgres: { url: string; connectTimeoutMs: number; statementTimeoutMs: number };
  readonly launcher: {
    dataDir: string;
    redisPort: number;
    pgPort: number;
    autoInstall: boolean;
    searchPath: string;
    useExternalRedis: boolean;
    useExternalPostgres: boolean;
  };
  readonly auth: {
    mode: Env['AUTH_MODE'];
    jwtSecret: string | undefined;
    jwtIssuer: string | undefined;
    jwtAudience: string | undefined;
    adminToken: string | undefined;
  };
  readonly lock: {
    watchdogTimeoutMs: number;
    waitMs: number;
    queueMs: number;
    leaseMs: number;
    localQueue: boolean;
  };
  readonly sale: {
    claimTtlMs: number;
    idempotencyTtlSeconds: number;
    idempotencyLeaseMs: number;
  };
  readonly orders: {
    enqueueBatchSize: number;
    enqueueMaxDelayMs: number;
    workerConcurrency: number;
    workerBatchSize: number;
    workerLockMs: number;
    sweepIntervalMs: number;
    sweepMinAgeMs: number;
  };
  readonly demo: { productId: string; stock: number };
  readonly bench: { routes: boolean };
}

/** Thrown by {@link loadConfig}; `message` lists every problem, one per line. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function deepFreeze<T>(value: T): T {
  for (const v of Object.values(value as object)) if (v && typeof v === 'object') deepFreeze(v);
  return Object.freeze(value);
}

/**
 * Parses and validates configuration.
 * @param env - variables to read (default `process.env`); empty strings count as unset.
 * @param defaults - values used where `env` has none (the launcher defaults AUTH_MODE to dev).
 * @returns a deeply frozen {@link Config}.
 * @throws {@link ConfigError} listing every bad or missing variable.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  defaults: Record<string, string> = {},
): Config {
  const known = Object.keys(envSchema.shape);
  const given = (k: string) => (env[k] !== undefined && env[k] !== '' ? env[k] : defaults[k]);
  const input = Object.fromEntries(
    known.filter((k) => given(k) !== undefined).map((k) => [k, given(k)]),
  );
  const parsed = envSchema.safeParse(input);
  const problems = [
    ...(parsed.error?.issues ?? []).map((i) => {
      const name = String(i.path[0] ?? '(env)');
      const got = input[name] !== undefined ? ` (got ${JSON.stringify(input[name])})` : '';
      return `${name}: ${i.message}${got}`;
    }),
    ...crossFieldProblems(input),
  ];
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  return deepFreeze({
    env: e.NODE_ENV,
    http: {
      host: e.HOST,
      port: e.PORT,
      bodyLimitBytes: e.BODY_LIMIT_BYTES,
      shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    },
    log: { level: e.LOG_LEVEL },
    redis: {
      url: e.REDIS_URL ?? `redis://127.0.0.1:${e.LOCAL_REDIS_PORT}`,
      keyPrefix: e.KEY_PREFIX,
      queuePrefix: e.QUEUE_PREFIX,
      commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    },
    postgres: {
      url: e.DATABASE_URL ?? `postgres://seckill@127.0.0.1:${e.LOCAL_PG_PORT}/seckill`,
      connectTimeoutMs: e.PG_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.PG_STATEMENT_TIMEOUT_MS,
    },
    launcher: {
      dataDir: e.DATA_DIR,
      redisPort: e.LOCAL_REDIS_PORT,
      pgPort: e.LOCAL_PG_PORT,
      autoInstall: e.AUTO_INSTALL,
      searchPath: e.PATH,
      useExternalRedis: e.REDIS_URL !== undefined,
      useExternalPostgres: e.DATABASE_URL !== undefined,
    },
    auth: {
      mode: e.AUTH_MODE,
      jwtSecret: e.JWT_SECRET,
      jwtIssuer: e.JWT_ISSUER,
      jwtAudience: e.JWT_AUDIENCE,
      adminToken: e.ADMIN_TOKEN,
    },
    lock: {
      watchdogTimeoutMs: e.WATCHDOG_TIMEOUT_MS,
      waitMs: e.LOCK_WAIT_MS,
      queueMs: e.LOCK_QUEUE_MS,
      leaseMs: e.LOCK_LEASE_MS,
      localQueue: e.LOCK_LOCAL_QUEUE,
    },
    sale: {
      claimTtlMs: e.CLAIM_TTL_MS,
      idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
      idempotencyLeaseMs: e.IDEMPOTENCY_LEASE_MS,
    },
    orders: {
      enqueueBatchSize: e.ENQUEUE_BATCH_SIZE,
      enqueueMaxDelayMs: e.ENQUEUE_MAX_DELAY_MS,
      workerConcurrency: e.WORKER_CONCURRENCY,
      workerBatchSize: e.WORKER_BATCH_SIZE,
      workerLockMs: e.WORKER_LOCK_MS,
      sweepIntervalMs: e.SWEEP_INTERVAL_MS,
      sweepMinAgeMs: e.SWEEP_MIN_AGE_MS,
    },
    demo: { productId: e.DEMO_PRODUCT_ID, stock: e.DEMO_STOCK },
    bench: { routes: e.BENCH_ROUTES },
  });
}
