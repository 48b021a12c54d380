/** Every `seckill` command: its help, its flags (node's parseArgs), and what runs it. */
import type { ParseArgsConfig } from 'node:util';
import type { CommandHelp } from './help.js';
import { EXPORT_OPTIONS, JWKS_OPTIONS, WEBHOOK_OPTIONS } from './export-options.js';
import { DROP_OPTIONS } from './drop-options.js';
import { SEED_OPTIONS } from './seed-options.js';

// Each command's code (and with it express, ioredis, BullMQ, Kysely) loads when it runs, so
// `--version`, `--help` and a usage error answer without it.
const commands = () => import('./commands.js');

export interface Command extends CommandHelp {
  /** names of the positional arguments it takes */
  args: string[];
  flags?: ParseArgsConfig['options'];
  run(args: string[], values: Record<string, unknown>): Promise<void>;
}

/** Where a one-shot command finds the stores. */
const STORES = [
  'REDIS_URL',
  'REDIS_CLUSTER_NODES',
  'LOCAL_REDIS_PORT',
  'DATABASE_URL',
  'LOCAL_PG_PORT',
  'KEY_PREFIX',
];

export const COMMANDS: Command[] = [
  {
    name: 'up',
    synopsis: '',
    what:
      'start local redis-server + PostgreSQL (unless REDIS_URL / DATABASE_URL are set), migrate, ' +
      'seed a demo sale, then serve the API and the order workers; Ctrl-C stops everything it started',
    env: [
      'DATA_DIR',
      'LOCAL_REDIS_PORT',
      'LOCAL_REDIS_SHARDS',
      'LOCAL_REDIS_REPLICAS',
      'LOCAL_PG_PORT',
      'AUTO_INSTALL',
      'REDIS_URL',
      'DATABASE_URL',
      'HOST',
      'PORT',
      'API_PROCESSES',
      'AUTH_MODE',
      'ADMIN_TOKEN',
      'DEMO_PRODUCT_ID',
      'DEMO_STOCK',
      'LOG_LEVEL',
    ],
    args: [],
    run: async () => (await import('./up.js')).up(),
  },
  {
    name: 'serve',
    synopsis: '',
    what: 'serve the API against REDIS_URL / DATABASE_URL (it waits for them; /readyz tells)',
    env: [
      'HOST',
      'PORT',
      'API_PROCESSES',
      'REDIS_URL',
      'REDIS_CLUSTER_NODES',
      'DATABASE_URL',
      'AUTH_MODE',
      'JWT_SECRET',
      'ADMIN_TOKEN',
      'RATE_LIMIT_USER',
      'RATE_LIMIT_IP',
      'MAX_INFLIGHT',
      'LOG_LEVEL',
    ],
    args: [],
    run: async () => (await commands()).serve(),
  },
  {
    name: 'worker',
    synopsis: '',
    what:
      'run order workers (and the sweepers) against REDIS_URL / DATABASE_URL; /healthz, /readyz ' +
      'and /metrics on WORKER_PORT',
    env: [
      'REDIS_URL',
      'REDIS_CLUSTER_NODES',
      'DATABASE_URL',
      'WORKER_PORT',
      'WORKER_CONCURRENCY',
      'WORKER_BATCH_SIZE',
      'SWEEP_INTERVAL_MS',
      'LOG_LEVEL',
    ],
    args: [],
    run: async () => (await commands()).worker(),
  },
  {
    name: 'reconcile',
    synopsis: '<product>',
    what: 'check that no unit was lost or sold twice; prints a report, exits 1 on a mismatch',
    env: STORES,
    args: ['product'],
    run: async ([productId]) => (await commands()).reconcile(productId!),
  },
  {
    name: 'migrate',
    synopsis: '',
    what: 'apply pending migrations (and move old segment keys to spread hash tags) and exit',
    env: [...STORES, 'PG_STATEMENT_TIMEOUT_MS'],
    args: [],
    run: async () => (await commands()).migrate(),
  },
  {
    name: 'seed',
    synopsis: '<product> --total N [options]',
    what: "seed (or reseed: --force while it is live) a product's stock over its segments",
    options: [
      { flag: '--total N', what: 'units on sale (required; a whole number, 0 or more)' },
      { flag: '--strategy NAME', what: 'segmented, global or lockfree (default: segmented)' },
      { flag: '--segments N', what: 'segment keys (default: 16; global: 1)' },
      { flag: '--limit-per-user N', what: 'units one buyer may buy (default: 1)' },
      {
        flag: '--pay-within SECONDS',
        what: 'buyers have this long to pay, or the units go back on sale (default: none, sales are final)',
      },
      {
        flag: '--require-sale-token',
        what: 'purchases need a sale token (default: off; needs SALE_TOKEN_SECRET)',
      },
      {
        flag: '--admit-per-second N',
        what: 'a waiting room admits N shoppers a second (with --max-active and --admitted-for; needs SALE_TOKEN_SECRET, kept by `up`)',
      },
      { flag: '--max-active N', what: 'waiting room: most shoppers admitted and not yet done' },
      {
        flag: '--admitted-for SECONDS',
        what: 'waiting room: how long an admission (its sale token) lasts',
      },
      {
        flag: '--starts-at ISO',
        what: 'when the sale opens, e.g. 2030-01-01T10:00:00Z (default: now)',
      },
      { flag: '--ends-at ISO', what: 'when it closes (default: never)' },
      {
        flag: '--draw-closes-at ISO',
        what: 'sell by a draw whose entries close then (with --buy-within; docs/draw.md; needs SALE_TOKEN_SECRET, kept by `up`)',
      },
      { flag: '--draw-opens-at ISO', what: 'draw: entries open then (default: now)' },
      { flag: '--buy-within SECONDS', what: 'draw: how long a winner has to buy' },
      {
        flag: '--max-entries-per-block N',
        what: 'draw: entries kept per client address block (IPv4 /24, IPv6 /64) at the freeze',
      },
      { flag: '--deny-list IDS', what: 'draw: shopper ids refused at the freeze, comma-separated' },
      {
        flag: '--challenge KIND',
        what: "the door's challenge for this product: pow, turnstile, hcaptcha, or off (default: the deployment's CHALLENGE; docs/fairness.md)",
      },
      {
        flag: '--challenge-floor-ms MS',
        what: "pow: the clean floor between a challenge's issue and its answer, 0-1500 (default CHALLENGE_CLEAN_FLOOR_MS)",
      },
      {
        flag: '--price AMOUNT',
        what: "the unit price in the currency's minor unit, e.g. 1999 (with --currency; default: unpriced)",
      },
      { flag: '--currency CODE', what: "the price's ISO 4217 currency, e.g. EUR (with --price)" },
      { flag: '--force', what: 'reseed a sale that is live (default: refused)' },
      {
        flag: '--discard WHAT',
        what: "what a reseed may throw away: line (the room's places), purchase-counts (kept by default), or both",
      },
      {
        flag: '--operator NAME',
        what: 'who seeds, as the audit log records it (default: the OS user)',
      },
      { flag: '--json', what: 'print the result as one JSON line instead of a summary' },
    ],
    env: STORES,
    args: ['product'],
    flags: SEED_OPTIONS,
    run: async ([productId], values) => {
      const { seed } = await commands();
      return seed(productId!, values as Parameters<typeof seed>[1]);
    },
  },
  {
    name: 'drop',
    synopsis:
      '<product> pause|resume|end|units|pace [--add N | --withdraw N] [--admit-per-second N] [--max-active N]',
    what: 'the controls of a drop under way (docs/operations.md#running-a-drop), recorded in the audit log',
    options: [
      { flag: '--add N', what: 'units: put N more units on sale' },
      { flag: '--withdraw N', what: 'units: take N unsold units off sale (never a sold one)' },
      { flag: '--admit-per-second N', what: "pace: the waiting room's new pace" },
      { flag: '--max-active N', what: 'pace: most shoppers admitted and not yet done' },
      {
        flag: '--operator NAME',
        what: 'who acts, as the audit log records it (default: the OS user)',
      },
      { flag: '--json', what: 'print the result as one JSON line instead of a summary' },
    ],
    env: STORES,
    args: ['product', 'action'],
    flags: DROP_OPTIONS,
    run: async ([productId, action], values) =>
      (await import('./drop.js')).drop(productId!, action!, values),
  },
  {
    name: 'orders',
    synopsis: 'export [--product P] [--status S] [--updated-since ISO] [--format ndjson|csv]',
    what: 'stream every order matching the filters to stdout, page after page (docs/events.md)',
    options: [
      { flag: '--product P', what: 'only this product' },
      {
        flag: '--status S',
        what: 'only this status: persisted, awaiting_payment, paid, cancelled, expired, refunded, disputed or dispute_lost',
      },
      { flag: '--updated-since ISO', what: 'only orders whose state changed at or after it' },
      {
        flag: '--format F',
        what: 'ndjson (default: one order a line, as GET /orders/:id) or csv (a header line)',
      },
    ],
    env: ['DATABASE_URL', 'LOCAL_PG_PORT'],
    args: ['action'],
    flags: EXPORT_OPTIONS,
    run: async ([action], values) =>
      (await import('./orders-export.js')).exportOrders(action!, values),
  },
  {
    name: 'webhooks',
    synopsis:
      'add|list|disable|enable|rotate|replay|dead-letters|retry [--url U] [--events T] [--id ID] [--from CURSOR]',
    what: 'manage webhook endpoints (as the admin API does, recorded in the audit log): add prints the whsec_ secret, once',
    options: [
      { flag: '--url U', what: 'add: the receiver (https, or http to an allowed host)' },
      { flag: '--events T', what: 'add: event types, comma-separated (default: *, all)' },
      {
        flag: '--id ID',
        what: 'disable, enable, rotate, replay, dead-letters, retry: the endpoint',
      },
      { flag: '--from CURSOR', what: 'replay: every event after this cursor is sent again' },
      {
        flag: '--operator NAME',
        what: 'who acts, as the audit log records each change (default: the OS user)',
      },
    ],
    env: ['DATABASE_URL', 'LOCAL_PG_PORT', 'WEBHOOK_ALLOW_PRIVATE', 'WEBHOOK_HTTP_HOSTS'],
    args: ['action'],
    flags: WEBHOOK_OPTIONS,
    run: async ([action], values) => (await import('./webhooks.js')).webhooks(action!, values),
  },
  {
    name: 'verify-draw',
    synopsis: '<transcript URL or file> [--chain HASH]',
    what:
      "recompute a draw from its public transcript: the frozen list's Merkle root, the beacon " +
      "(its signature against the chain's key), every rank; prints the winners, exit 1 on a mismatch",
    options: [
      {
        flag: '--chain HASH',
        what: "trust this beacon chain (drand's quicknet is trusted by its pinned key; a shop's local chain only when named; default: DRAW_CHAIN_INFO's, when set)",
      },
    ],
    env: ['DRAW_CHAIN_INFO'],
    args: ['transcript'],
    flags: { chain: { type: 'string' } },
    run: async ([where], values) =>
      (await import('./verify-draw.js')).verifyDraw(where!, values as { chain?: string }),
  },
  {
    name: 'jwks',
    synopsis: 'refresh [--operator NAME]',
    what: "every API process fetches the identity provider's keys (JWT_JWKS_URL) again now, recorded in the audit log",
    options: [
      {
        flag: '--operator NAME',
        what: 'who acts, as the audit log records it (default: the OS user)',
      },
    ],
    env: STORES,
    args: ['action'],
    flags: JWKS_OPTIONS,
    run: async ([action], values) => (await import('./jwks.js')).jwks(action!, values),
  },
];
