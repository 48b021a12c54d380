/**
 * The variables in the order a person meets them: the handful every deployment sets, then one
 * group per feature, then the tuning knobs. `.env.example` and docs/configuration.md are written
 * in this order (env-docs.ts); every variable of the schema is in exactly one group.
 */
import type { envSchema } from './env.js';

type Name = keyof typeof envSchema.shape;

export interface EnvGroup {
  title: string;
  /** one line: who sets these, and when */
  intro: string;
  names: readonly Name[];
  /** docs/configuration.md only: markdown after the group's table */
  notes?: string;
}

export const ENV_GROUPS: readonly EnvGroup[] = [
  {
    title: 'Every deployment sets',
    intro:
      'Where the stores are, who may call, and the secrets: set these (one of each either/or pair), leave the rest at their defaults until a feature needs them.',
    names: [
      'NODE_ENV',
      'HOST',
      'PORT',
      'LOG_LEVEL',
      'REDIS_URL',
      'REDIS_CLUSTER_NODES',
      'DATABASE_URL',
      'AUTH_MODE',
      'JWT_SECRET',
      'JWT_JWKS_URL',
      'JWT_ISSUER',
      'JWT_AUDIENCE',
      'ADMIN_TOKEN',
      'SALE_TOKEN_SECRET',
      'PAYMENT_WEBHOOK_SECRET',
    ],
    notes: 'How identity acts: [api.md](api.md#identity), [admin-access.md](admin-access.md).',
  },
  {
    title: 'The sale',
    intro: 'How a purchase is answered and remembered: sale tokens, Idempotency-Keys, durability.',
    names: [
      'SALE_TOKEN_TTL_S',
      'SALE_TOKEN_LEAD_S',
      'IDEMPOTENCY_TTL_SECONDS',
      'IDEMPOTENCY_LEASE_MS',
      'IDEMPOTENCY_MAX_PER_USER',
      'REDIS_WAIT_REPLICAS',
      'RETURN_FREES_LIMIT',
    ],
    notes: 'How it acts: [design/sale.md](design/sale.md).',
  },
  {
    title: 'Waiting rooms',
    intro: "A room's size and the pace of its admitter; only products seeded with a room use them.",
    names: [
      'ROOM_MAX_PLACES',
      'ROOM_EXPIRING_LEAD_S',
      'ROOM_LEASE_MS',
      'ROOM_TICK_MS',
      'ROOM_RECHECK_MS',
    ],
    notes: 'How they act: [waiting-room.md](waiting-room.md).',
  },
  {
    title: 'The door: challenges and fairness',
    intro:
      'A price an identity pays before it joins a line or takes a sale token (a proof of work, Turnstile or hCaptcha), for the products listed; and what the fairness report counts as a bot.',
    names: [
      'CHALLENGE',
      'CHALLENGE_PRODUCTS',
      'CHALLENGE_SECRET',
      'CHALLENGE_SITE_KEY',
      'CHALLENGE_VERIFY_URL',
      'CHALLENGE_TTL_S',
      'CHALLENGE_CLEAN_FLOOR_MS',
      'CHALLENGE_FLAGGED_FLOOR_MS',
      'CHALLENGE_POW_SECRET',
      'CHALLENGE_TURNSTILE_SECRET',
      'CHALLENGE_TURNSTILE_SITE_KEY',
      'CHALLENGE_HCAPTCHA_SECRET',
      'CHALLENGE_HCAPTCHA_SITE_KEY',
      'FAIRNESS_IDENTITIES_PER_BLOCK',
      'FAIRNESS_BURST_IDENTITIES',
      'FAIRNESS_BURST_WINDOW_S',
      'FAIRNESS_ACCOUNT_AGE_CLAIM',
      'FAIRNESS_ACCOUNT_MIN_AGE_DAYS',
    ],
    notes: 'How it acts: [fairness.md](fairness.md).',
  },
  {
    title: 'Draws',
    intro:
      "The public random beacon a draw's ranks come from (drand's quicknet by default); only products seeded as a draw use them.",
    names: [
      'DRAW_CHAIN_INFO',
      'DRAW_BEACON_URLS',
      'DRAW_BEACON_MARGIN_MS',
      'DRAW_BEACON_TIMEOUT_MS',
    ],
    notes: 'How a draw runs and how anyone checks it: [draw.md](draw.md).',
  },
  {
    title: 'The queue page and Web Push',
    intro:
      "The shopper's page at `/queue/:productId`: the shop's checkout, look and name; set the VAPID keys to tell a shopper their turn came when the tab is closed.",
    names: [
      'QUEUE_PAGE_RETURN_URL',
      'QUEUE_PAGE_THEME_CSS',
      'QUEUE_PAGE_LOGO_URL',
      'QUEUE_PAGE_SHOP_NAME',
      'VAPID_PUBLIC_KEY',
      'VAPID_PRIVATE_KEY',
      'VAPID_SUBJECT',
      'PUSH_SERVICE_ORIGINS',
    ],
    notes: 'How it acts: [queue-page.md](queue-page.md).',
  },
  {
    title: 'Orders and payments',
    intro: "The payment provider's webhooks: set the secret of the one you use.",
    names: ['STRIPE_WEBHOOK_SECRET', 'PAYMENT_WEBHOOK_TOLERANCE_S'],
    notes: 'How they act: [payments.md](payments.md).',
  },
  {
    title: 'Order events and webhooks',
    intro: 'How long the event feed keeps events, and how webhooks are sent to your receivers.',
    names: [
      'EVENT_RETENTION_HOURS',
      'WEBHOOK_TIMEOUT_MS',
      'WEBHOOK_RETRY_SCHEDULE',
      'WEBHOOK_CONCURRENCY',
      'WEBHOOK_ALLOW_PRIVATE',
      'WEBHOOK_HTTP_HOSTS',
    ],
    notes: 'How they act: [events.md](events.md).',
  },
  {
    title: 'Browsers (CORS)',
    intro: "Set when a shop's pages on another origin call the API from a browser.",
    names: ['CORS_ORIGINS', 'CORS_CREDENTIALS', 'CORS_MAX_AGE_S'],
    notes: 'How they act: [api.md, Browsers](api.md#browsers-cors).',
  },
  {
    title: 'Processes, probes and shutdown',
    intro: 'How many API processes, where the worker answers its probes, how a rollout drains.',
    names: ['API_PROCESSES', 'WORKER_PORT', 'DRAIN_MS', 'SHUTDOWN_TIMEOUT_MS'],
    notes: 'How they act: [operations.md](operations.md), [scale-out.md](scale-out.md).',
  },
  {
    title: 'Limits',
    intro:
      'What one shopper, one address or one process may ask; the defaults suit a shop behind one proxy hop once TRUST_PROXY says so.',
    names: [
      'TRUST_PROXY',
      'RATE_LIMIT_USER',
      'RATE_LIMIT_USER_BURST',
      'RATE_LIMIT_IP',
      'RATE_LIMIT_IP_BURST',
      'RATE_LIMIT_ORDERS',
      'RATE_LIMIT_POLL_IP',
      'ADMIN_GUESS_LIMIT',
      'MAX_INFLIGHT',
      'BODY_LIMIT_BYTES',
      'HTTP_REQUEST_TIMEOUT_MS',
      'MAX_UNREAD_BODIES_PER_ADDRESS',
      'REDIS_MEMORY_SHED_AT',
    ],
    notes: [
      'How they act: [api.md, Admission control](api.md#admission-control).',
      '',
      '**Why these defaults**. Out of the box, joins, polls and purchases are limited per',
      'shopper and per client address, at rates a real shopper never meets: a shopper joins once, polls',
      'once per `pollAfterSeconds` (1 s at the least) and buys once, with a retry or two a second apart',
      'when told `Retry-After`; five of one route in one second (`RATE_LIMIT_USER=5/s`) is a script, not a',
      'person with a second tab. An address carries many shoppers behind a NAT, so its limits are forty',
      'and twenty times that: `RATE_LIMIT_IP=200/s` on joins, purchases and sale tokens, and',
      '`RATE_LIMIT_POLL_IP=100/s` polls per API process. Without them one address joined 3,000 made-up',
      "ids in 1.85 s (a waiting room's places fill Redis at that pace: [waiting-room.md](waiting-room.md#memory)).",
      "Behind a proxy, set `TRUST_PROXY`: without it every shopper has the proxy's address and shares its",
      '200 a second. A shop that limits elsewhere (a CDN, a gateway) sets them `off`. `npm run bench`, the',
      'chaos runs and the test suite send their crowds from one address and set their own',
      '(`NO_RATE_LIMITS` in `src/config/rate.ts`, then the limits each one measures).',
    ].join('\n'),
  },
  {
    title: 'The local stack (`seckill up`)',
    intro:
      'Read by `seckill up` alone: the Redis and PostgreSQL it runs on this machine, and its demo.',
    names: [
      'DATA_DIR',
      'LOCAL_REDIS_PORT',
      'LOCAL_REDIS_SHARDS',
      'LOCAL_REDIS_REPLICAS',
      'LOCAL_REDIS_MAXMEMORY',
      'LOCAL_PG_PORT',
      'STOREFRONT_PORT',
      'LOCAL_BEACON_PORT',
      'PATH',
      'AUTO_INSTALL',
      'DEMO_PRODUCT_ID',
      'DEMO_STOCK',
    ],
  },
  {
    title: 'Tuning',
    intro:
      'Leave these alone unless a benchmark or an incident shows one is the limit: their defaults are measured (docs/benchmarks.md), and each trades one failure for another.',
    names: [
      'KEY_PREFIX',
      'QUEUE_PREFIX',
      'REDIS_COMMAND_TIMEOUT_MS',
      'PG_CONNECT_TIMEOUT_MS',
      'PG_STATEMENT_TIMEOUT_MS',
      'LISTEN_BACKLOG',
      'FAST_PATH',
      'LOCK_WAIT_MS',
      'LOCK_QUEUE_MS',
      'LOCK_LEASE_MS',
      'LOCK_LOCAL_QUEUE',
      'WATCHDOG_TIMEOUT_MS',
      'ENQUEUE_BATCH_SIZE',
      'ENQUEUE_MAX_DELAY_MS',
      'WORKER_CONCURRENCY',
      'WORKER_BATCH_SIZE',
      'WORKER_LOCK_MS',
      'SWEEP_INTERVAL_MS',
      'SWEEP_MIN_AGE_MS',
      'EVENT_RELAY_INTERVAL_MS',
      'BENCH_ROUTES',
    ],
  },
];
