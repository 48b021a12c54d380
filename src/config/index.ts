/**
 * The one place that reads the environment: `loadConfig()` parses it with a zod schema, reports
 * every bad variable at once, and returns a deeply frozen, typed config each component slices.
 */
import { NO_RATE_LIMITS, parseRate, type RateLimit } from './rate.js';
import { redactText, redactUrl } from './redact.js';
import { clusterPortSpan, crossFieldProblems, envSchema, type Env } from './env.js';
import {
  challengeConfig,
  fairnessConfig,
  type ChallengeConfig,
  type FairnessConfig,
} from './door.js';
import { eventsConfig, type EventsConfig } from './events.js';
import { deprecatedValues } from './deprecated.js';
import { queuePageConfig, type QueuePageConfig } from './queue-page.js';
import { drawConfig } from './draw.js';
import { clusterNodes } from './cluster-nodes.js';

export { clusterPortSpan, envSchema, NO_RATE_LIMITS, parseRate, redactText, redactUrl };
export type { RateLimit };
export type { ChallengeConfig };
export { envDefault, envExample, plainDescription, type EnvName } from './env-docs.js';

export interface Config {
  readonly env: Env['NODE_ENV'];
  /** warnings about deprecated variables that were set, logged at start (createLogger) */
  readonly deprecations: readonly string[];
  /** order events and their webhooks (docs/events.md) */
  readonly events: EventsConfig;
  readonly http: {
    host: string;
    port: number;
    bodyLimitBytes: number;
    /** a request's headers and body must arrive within this (node's requestTimeout) */
    requestTimeoutMs: number;
    /** half-sent bodies per peer address; 0: no bound */
    maxUnreadBodiesPerAddress: number;
    /** the API's listen backlog: a burst of connections must not overflow it (SYN retries) */
    listenBacklog: number;
    /** which browser origins may call the API (CORS); no origins: no CORS answers at all */
    cors: { origins: readonly string[]; credentials: boolean; maxAgeSeconds: number };
    /** probes and known sold-out refusals answered ahead of Express (FAST_PATH) */
    fastPath: boolean;
    shutdownTimeoutMs: number;
    /** before closing: /readyz says 503 this long while requests are still served */
    drainMs: number;
    /** `seckill worker`'s probes and /metrics; 0: none */
    workerPort: number;
  };
  readonly log: { level: Env['LOG_LEVEL'] };
  readonly redis: {
    /** one Redis (standalone); for a cluster, its first node (for messages) */
    url: string;
    /** a Redis Cluster's seed nodes; undefined: one standalone Redis at `url` */
    cluster: ReadonlyArray<{ host: string; port: number }> | undefined;
    keyPrefix: string;
    queuePrefix: string;
    commandTimeoutMs: number;
    /** share of maxmemory from which what gives way is refused (redis/memory-headroom.ts) */
    memoryShedAt: number;
    /** durable mode: replicas a sale waits for (WAIT) before it answers */
    waitReplicas: number;
  };
  readonly postgres: { url: string; connectTimeoutMs: number; statementTimeoutMs: number };
  readonly launcher: {
    dataDir: string;
    redisPort: number;
    /** 1: one redis-server; 3+: a local cluster of that many masters */
    redisShards: number;
    redisReplicas: number;
    /** maxmemory of each local redis-server */
    redisMaxmemory: string;
    pgPort: number;
    /** `up` serves the storefront example here (0: not at all) */
    storefrontPort: number;
    /** the local beacon chain `up` serves draws from (0: none) */
    localBeaconPort: number;
    autoInstall: boolean;
    searchPath: string;
    useExternalRedis: boolean;
    useExternalPostgres: boolean;
  };
  readonly auth: {
    mode: Env['AUTH_MODE'];
    jwtSecret: string | undefined;
    /** the identity provider's published keys (RS256, ES256, EdDSA) */
    jwksUrl: string | undefined;
    jwtIssuer: string | undefined;
    jwtAudience: string | undefined;
    adminToken: string | undefined;
    /** wrong admin tokens per client address (bearer or dashboard login) */
    guessLimit: RateLimit;
    accountAgeClaim?: string | undefined;
  };
  readonly api: { processes: number };
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
    /** Idempotency-Key records one shopper may hold at once, per product */
    idempotencyMaxPerUser: number;
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
  readonly payments: {
    /** a cancelled, expired or refunded (units returned) order no longer counts against its buyer's limit */
    returnFreesLimit: boolean;
    /** undefined: the payment webhook is off */
    webhookSecret: string | undefined;
    webhookToleranceSeconds: number;
    /** Stripe's endpoint secret (POST /payments/stripe); undefined: that route is off */
    stripeWebhookSecret: string | undefined;
  };
  readonly admission: {
    /** undefined: no limit */
    userLimit: RateLimit | undefined;
    ipLimit: RateLimit | undefined;
    /** waiting-room polls per client address, per process (in memory); undefined: no limit */
    pollLimit: RateLimit | undefined;
    /** per shopper on the order routes */
    orderLimit: RateLimit;
    trustProxy: boolean | number | string;
    /** 0: no cap */
    maxInflight: number;
    saleTokenSecret: string | undefined;
    saleTokenTtlSeconds: number;
    saleTokenLeadSeconds: number;
    /** the challenge at the door (docs/fairness.md) */
    challenge: ChallengeConfig;
    fairness: FairnessConfig;
  };
  /** waiting rooms' admitters (docs/waiting-room.md) */
  readonly room: {
    leaseMs: number;
    tickMs: number;
    /** a room asleep with shoppers in line is looked at after this anyway (then less often) */
    recheckMs: number;
    /** pins the lobby's shuffle (tests set it on the config; no variable) */
    shuffleSeed: number | undefined;
    /** places a room's line holds at most */
    maxPlaces: number;
    /** an admitted shopper hears their turn runs out this long before (0: never) */
    expiringLeadMs: number;
  };
  /** the queue page (docs/queue-page.md) */
  readonly queuePage: QueuePageConfig['queuePage'];
  /** Web Push (VAPID): undefined without keys, and the page offers no push */
  readonly push: QueuePageConfig['push'];
  /** draws' beacon (docs/draw.md) */
  readonly draw: ReturnType<typeof drawConfig>;
  readonly demo: { productId: string; stock: number };
  readonly bench: { routes: boolean };
}

function rateLimit(name: string, text: string | undefined, burst: number | undefined) {
  if (text === undefined || text === 'off') return undefined;
  const r = parseRate(text);
  return { name, ...r, burst: burst ?? r.rate };
}

/** Express's "trust proxy" setting: a boolean, a hop count, or addresses / subnets. */
function trustProxy(value: string): boolean | number | string {
  if (value === 'true' || value === 'false') return value === 'true';
  return /^\d+$/.test(value) ? Number(value) : value;
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
  const given = (name: string) =>
    env[name] !== undefined && env[name] !== '' ? env[name] : defaults[name];
  const input = Object.fromEntries(
    known.filter((k) => given(k) !== undefined).map((k) => [k, given(k)]),
  );
  const parsed = envSchema.safeParse(input);
  const problem = (name: string, message: string) => {
    // a secret's value is never echoed (logs and terminals keep it), nor a URL's password
    const shown = given(name) !== undefined && !/SECRET|TOKEN|PRIVATE/.test(name);
    const got = shown ? ` (got ${JSON.stringify(redactText(given(name)!))})` : '';
    return `${name}: ${message}${got}`;
  };
  const old = deprecatedValues(given);
  const problems = [
    ...(parsed.error?.issues ?? []).map((i) => problem(String(i.path[0] ?? '(env)'), i.message)),
    ...old.problems.map(([name, message]) => problem(name, message)),
    ...crossFieldProblems(input),
  ];
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  return deepFreeze({
    env: e.NODE_ENV,
    deprecations: old.warnings,
    events: eventsConfig(e),
    http: {
      host: e.HOST,
      port: e.PORT,
      bodyLimitBytes: e.BODY_LIMIT_BYTES,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      maxUnreadBodiesPerAddress: e.MAX_UNREAD_BODIES_PER_ADDRESS,
      listenBacklog: e.LISTEN_BACKLOG,
      cors: {
        origins: (e.CORS_ORIGINS ?? '')
          .split(',')
          .map((o) => o.trim())
          .filter((o) => o !== ''),
        credentials: e.CORS_CREDENTIALS,
        maxAgeSeconds: e.CORS_MAX_AGE_S,
      },
      fastPath: e.FAST_PATH,
      shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
      drainMs: e.DRAIN_MS,
      workerPort: e.WORKER_PORT,
    },
    log: { level: e.LOG_LEVEL },
    redis: {
      url:
        e.REDIS_URL ??
        (e.REDIS_CLUSTER_NODES
          ? `redis://${e.REDIS_CLUSTER_NODES.split(',')[0]}`
          : `redis://127.0.0.1:${e.LOCAL_REDIS_PORT}`),
      cluster: clusterNodes(e),
      waitReplicas: e.REDIS_WAIT_REPLICAS,
      keyPrefix: e.KEY_PREFIX,
      queuePrefix: e.QUEUE_PREFIX,
      commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
      memoryShedAt: e.REDIS_MEMORY_SHED_AT,
    },
    postgres: {
      url: e.DATABASE_URL ?? `postgres://seckill@127.0.0.1:${e.LOCAL_PG_PORT}/seckill`,
      connectTimeoutMs: e.PG_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: e.PG_STATEMENT_TIMEOUT_MS,
    },
    launcher: {
      dataDir: e.DATA_DIR,
      redisPort: e.LOCAL_REDIS_PORT,
      redisShards: e.LOCAL_REDIS_SHARDS,
      redisReplicas: e.LOCAL_REDIS_REPLICAS,
      redisMaxmemory: e.LOCAL_REDIS_MAXMEMORY,
      pgPort: e.LOCAL_PG_PORT,
      storefrontPort: e.STOREFRONT_PORT,
      localBeaconPort: e.LOCAL_BEACON_PORT,
      autoInstall: e.AUTO_INSTALL,
      searchPath: e.PATH,
      useExternalRedis: e.REDIS_URL !== undefined || e.REDIS_CLUSTER_NODES !== undefined,
      useExternalPostgres: e.DATABASE_URL !== undefined,
    },
    auth: {
      mode: e.AUTH_MODE,
      jwtSecret: e.JWT_SECRET,
      jwksUrl: e.JWT_JWKS_URL,
      jwtIssuer: e.JWT_ISSUER,
      jwtAudience: e.JWT_AUDIENCE,
      adminToken: e.ADMIN_TOKEN,
      guessLimit: rateLimit('admin-guess', e.ADMIN_GUESS_LIMIT, undefined)!,
      accountAgeClaim: e.FAIRNESS_ACCOUNT_AGE_CLAIM,
    },
    api: { processes: e.API_PROCESSES },
    lock: {
      watchdogTimeoutMs: e.WATCHDOG_TIMEOUT_MS,
      waitMs: e.LOCK_WAIT_MS,
      queueMs: e.LOCK_QUEUE_MS,
      leaseMs: e.LOCK_LEASE_MS,
      localQueue: e.LOCK_LOCAL_QUEUE,
    },
    sale: {
      claimTtlMs: old.values.CLAIM_TTL_MS ?? e.IDEMPOTENCY_LEASE_MS,
      idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
      idempotencyLeaseMs: e.IDEMPOTENCY_LEASE_MS,
      idempotencyMaxPerUser: e.IDEMPOTENCY_MAX_PER_USER,
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
    payments: {
      returnFreesLimit: e.RETURN_FREES_LIMIT,
      webhookSecret: e.PAYMENT_WEBHOOK_SECRET,
      webhookToleranceSeconds: e.PAYMENT_WEBHOOK_TOLERANCE_S,
      stripeWebhookSecret: e.STRIPE_WEBHOOK_SECRET,
    },
    admission: {
      userLimit: rateLimit('user', e.RATE_LIMIT_USER, e.RATE_LIMIT_USER_BURST),
      ipLimit: rateLimit('ip', e.RATE_LIMIT_IP, e.RATE_LIMIT_IP_BURST),
      orderLimit: rateLimit('orders', e.RATE_LIMIT_ORDERS, undefined)!,
      pollLimit: rateLimit('poll', e.RATE_LIMIT_POLL_IP, undefined),
      trustProxy: trustProxy(e.TRUST_PROXY),
      maxInflight: e.MAX_INFLIGHT,
      saleTokenSecret: e.SALE_TOKEN_SECRET,
      saleTokenTtlSeconds: e.SALE_TOKEN_TTL_S,
      saleTokenLeadSeconds: e.SALE_TOKEN_LEAD_S,
      challenge: challengeConfig(e),
      fairness: fairnessConfig(e),
    },
    room: {
      leaseMs: e.ROOM_LEASE_MS,
      tickMs: e.ROOM_TICK_MS,
      recheckMs: e.ROOM_RECHECK_MS,
      shuffleSeed: old.values.ROOM_SHUFFLE_SEED,
      maxPlaces: e.ROOM_MAX_PLACES,
      expiringLeadMs: e.ROOM_EXPIRING_LEAD_S * 1_000,
    },
    ...queuePageConfig(e),
    draw: drawConfig(e),
    demo: { productId: e.DEMO_PRODUCT_ID, stock: e.DEMO_STOCK },
    bench: { routes: e.BENCH_ROUTES },
  });
}
