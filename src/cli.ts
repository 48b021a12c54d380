#!/usr/bin/env node
/**
 * One entry: `seckill up | serve | worker | migrate | seed | reconcile`. The composition root:
 * it reads the environment through the config module and wires the parts each command needs.
 */
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { MigrationError, migrateToLatest } from './db/migrate.js';
import { messageOf } from './errors.js';
import { closeOnSignals, Lifecycle } from './lifecycle.js';
import { createLogger, type Logger } from './log.js';
import { serveApi } from './main.js';
import { pingRedis } from './redis/connection.js';
import { createRuntime, type Runtime } from './runtime.js';
import { MissingBinaryError } from './services/binaries.js';
import { localAdminToken, startLocalServices } from './services/local-stack.js';
import { seedBody } from './http/admin.js';
import { readProductState, SaleError, seedProduct } from './inventory/index.js';
import {
  reconcile,
  startOrderQueue,
  startOrderSubmitter,
  startOrderWorker,
} from './orders/index.js';

const USAGE = `Usage: seckill <command>

Commands:
  up        start local redis-server + PostgreSQL (unless REDIS_URL / DATABASE_URL are set),
            migrate, seed a demo sale, then serve the API and the order workers;
            Ctrl-C stops everything it started
  serve     serve the API against REDIS_URL / DATABASE_URL
  worker    run order workers (and the outbox sweeper) against REDIS_URL / DATABASE_URL
  reconcile <product>
            check that no unit was lost or sold twice; prints a report, exits 1 on a mismatch
  migrate   apply pending migrations and exit
  seed <product> --total N [--strategy segmented|global|lockfree] [--segments N]
            [--limit-per-user N] [--starts-at ISO] [--ends-at ISO] [--force]
            seed (or reseed) a product's stock over its segments

Configuration comes from environment variables; see README.md#configuration.`;

const progress = (line: string) => process.stderr.write(`[seckill] ${line}\n`);

/** Friendly failure for errors that are the operator's to fix: message only, no stack. */
class ExitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

async function migrate(config: Config, logger: Logger): Promise<void> {
  const lifecycle = new Lifecycle(logger);
  const rt = createRuntime(config, logger, lifecycle);
  try {
    const applied = await migrateToLatest(rt.db);
    progress(
      applied.length ? `applied migrations: ${applied.join(', ')}` : 'database is up to date',
    );
  } finally {
    await lifecycle.close();
  }
}

async function up(): Promise<void> {
  const first = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const config = loadConfig(process.env, {
    AUTH_MODE: 'dev',
    ADMIN_TOKEN: localAdminToken(first.launcher.dataDir),
  });
  const logger = createLogger(config);
  const lifecycle = new Lifecycle(logger);
  closeOnSignals(lifecycle, logger, Math.max(config.http.shutdownTimeoutMs, 30_000));
  try {
    await startLocalServices({
      config,
      lifecycle,
      progress,
      onCrash: (name, code, logFile) => {
        logger.fatal({ service: name, code, logFile }, 'a local server exited unexpectedly');
        void lifecycle.close().then(() => process.exit(1));
      },
    });
    const rt = createRuntime(config, logger, lifecycle);
    const applied = await migrateToLatest(rt.db);
    if (applied.length) progress(`applied migrations: ${applied.join(', ')}`);
    warnDevAuth(config);
    const queue = startOrderQueue(rt);
    // The demo seed and the worker need Redis (BullMQ would wait for it forever). A given
    // REDIS_URL that does not answer must not stop the API: it serves /healthz, and /readyz
    // says 503 naming Redis, until Redis answers; then the rest starts.
    const redisParts = async () => {
      await seedDemo(rt);
      await startOrderWorker(rt, queue);
    };
    const redisDown = await redisProblem(rt);
    if (!redisDown) await redisParts();
    await serveApi(rt, { onPurchase: startOrderSubmitter(rt, queue), queues: [queue] });
    if (redisDown) {
      progress(
        `Redis at ${redactUrl(config.redis.url)} does not answer, ${redisDown}: serving ` +
          '/healthz, and /readyz answers 503 until it does; the demo sale and the order workers start then',
      );
      void startWhenRedisAnswers(rt, redisParts).then(
        (started) => started && printReady(config),
        (err: unknown) => {
          logger.fatal({ err: messageOf(err) }, 'start-up failed after Redis came back');
          void lifecycle.close().then(() => process.exit(1));
        },
      );
      return;
    }
  } catch (err) {
    // Stop whatever already started: a failed start must not leave servers behind.
    await lifecycle.close();
    throw err;
  }
  printReady(config);
}

/** A URL fit for a log line: the password, if any, masked. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** Why Redis does not answer a PING within a second, or undefined when it does. */
async function redisProblem(rt: Runtime): Promise<string | undefined> {
  const timeout = new Promise<string>((r) => setTimeout(r, 1_000, 'no answer within 1 s').unref());
  return Promise.race([pingRedis(rt.redis).then(() => undefined, messageOf), timeout]);
}

/** Polls Redis each second until it answers, then runs `start`; false if shutdown came first. */
async function startWhenRedisAnswers(rt: Runtime, start: () => Promise<void>): Promise<boolean> {
  while (!rt.lifecycle.isClosing) {
    if (!(await redisProblem(rt))) {
      if (rt.lifecycle.isClosing) return false;
      progress('Redis answers: starting the demo sale and the order workers');
      await start();
      return true;
    }
    await sleep(1_000);
  }
  return false;
}

function printReady(config: Config): void {
  const base = `http://${config.http.host}:${config.http.port}`;
  progress(
    `ready: ${base}/readyz   admin token in ${resolve(config.launcher.dataDir, 'admin-token')}   ` +
      'Ctrl-C stops everything',
  );
  progress(
    `try: curl -si -X POST ${base}/seckill -H 'content-type: application/json' ` +
      `-H 'x-user-id: alice' -d '{"productId":"${config.demo.productId}"}'`,
  );
}

/** The demo sale `up` ends with (seeded once; a later `up` leaves it as it is). */
async function seedDemo(rt: Runtime): Promise<void> {
  const { productId, stock } = rt.config.demo;
  const deps = { redis: rt.redis, keys: rt.inventory.keys, db: rt.db };
  const existing = await readProductState(deps, productId);
  if (existing) {
    progress(`demo sale "${productId}": ${existing.status}, ${existing.remaining} left`);
    return;
  }
  await seedProduct(deps, productId, { total: stock, segments: 4, strategy: 'segmented' });
  progress(`seeded demo sale "${productId}": ${stock} units over 4 segments, 1 per shopper`);
}

const SEED_OPTIONS = {
  total: { type: 'string' },
  segments: { type: 'string' },
  strategy: { type: 'string', default: 'segmented' },
  'limit-per-user': { type: 'string' },
  'starts-at': { type: 'string' },
  'ends-at': { type: 'string' },
  force: { type: 'boolean', default: false },
} as const;

async function seed(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: SEED_OPTIONS,
  });
  const productId = positionals[1];
  if (!productId || positionals.length > 2) {
    throw new ExitError(`seed takes one product id\n\n${USAGE}`, 2);
  }
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const parsed = seedBody.safeParse({
    total: num(values.total),
    segments: num(values.segments),
    strategy: values.strategy,
    limitPerUser: num(values['limit-per-user']),
    startsAt: values['starts-at'],
    endsAt: values['ends-at'],
  });
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  --${i.path.join('.')}: ${i.message}`);
    throw new ExitError(`invalid seed:\n${lines.join('\n')}`, 2);
  }
  const b = parsed.data;
  const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const logger = createLogger(config);
  const rt = createRuntime(config, logger);
  try {
    const r = await seedProduct(
      { redis: rt.redis, keys: rt.inventory.keys, db: rt.db },
      productId,
      {
        total: b.total,
        segments: b.segments ?? (b.strategy === 'global' ? 1 : 16),
        strategy: b.strategy,
        startsAt: b.startsAt ? new Date(b.startsAt) : undefined,
        endsAt: b.endsAt ? new Date(b.endsAt) : undefined,
        limitPerUser: b.limitPerUser,
      },
      { force: values.force },
    );
    process.stdout.write(`${JSON.stringify(r)}\n`);
  } catch (err) {
    if (err instanceof SaleError) throw new ExitError(err.message, 1);
    throw err;
  } finally {
    await rt.lifecycle.close();
  }
}

async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  const rt = createRuntime(config, logger);
  closeOnSignals(rt.lifecycle, logger, config.http.shutdownTimeoutMs);
  warnDevAuth(config);
  const queue = startOrderQueue(rt);
  await serveApi(rt, { onPurchase: startOrderSubmitter(rt, queue), queues: [queue] });
}

async function worker(config: Config): Promise<void> {
  const logger = createLogger(config);
  const rt = createRuntime(config, logger);
  closeOnSignals(rt.lifecycle, logger, config.http.shutdownTimeoutMs);
  const queue = startOrderQueue(rt);
  await startOrderWorker(rt, queue);
  progress(
    `order worker running: concurrency ${config.orders.workerConcurrency}, ` +
      `batches of ${config.orders.workerBatchSize}, sweeping every ${config.orders.sweepIntervalMs} ms`,
  );
}

async function reconcileCommand(argv: string[]): Promise<void> {
  const productId = argv[1];
  if (!productId || argv.length > 2)
    throw new ExitError(`reconcile takes one product id\n\n${USAGE}`, 2);
  const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const rt = createRuntime(config, createLogger(config));
  try {
    const report = await reconcile(
      { redis: rt.redis, keys: rt.inventory.keys, db: rt.db },
      productId,
    );
    if (!report) throw new ExitError(`no product "${productId}"`, 1);
    const lines = [
      `product ${report.productId} (epoch ${report.epoch})`,
      `  seeded     ${report.total}`,
      `  remaining  ${report.remaining}`,
      `  pending    ${report.pending}   (sold, still in an outbox)`,
      `  persisted  ${report.persisted}   (${report.persistedOrders} order rows, ${report.distinctBuyers} buyers)`,
      `  claims     ${report.openClaims} open`,
      report.ok
        ? 'OK: every unit is accounted for'
        : `MISMATCH:\n${report.problems.map((p) => `  - ${p}`).join('\n')}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n${JSON.stringify(report)}\n`);
    if (!report.ok) process.exitCode = 1;
  } finally {
    await rt.lifecycle.close();
  }
}

function warnDevAuth(config: Config): void {
  if (config.auth.mode !== 'dev') return;
  progress(
    '!!! AUTH_MODE=dev: the shopper id is taken from the X-User-Id header without any check. ' +
      'For demos and load tests only; never expose this process. !!!',
  );
}

async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { help: { type: 'boolean', short: 'h' } },
  });
  const [command] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    if (!command && !values.help) process.exitCode = 2;
    return;
  }
  switch (command) {
    case 'up':
      return up();
    case 'serve':
      return serve(loadConfig());
    case 'seed':
      return seed(argv);
    case 'worker':
      return worker(loadConfig(process.env, { AUTH_MODE: 'dev' }));
    case 'reconcile':
      return reconcileCommand(positionals);
    case 'migrate': {
      const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
      return migrate(config, createLogger(config));
    }
    default:
      throw new ExitError(`unknown command "${command}"\n\n${USAGE}`, 2);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\nSee README.md#configuration.\n`);
    process.exit(2);
  }
  if (err instanceof ExitError) {
    process.stderr.write(`seckill: ${err.message}\n`);
    process.exit(err.code);
  }
  if (err instanceof MissingBinaryError || err instanceof MigrationError) {
    process.stderr.write(`seckill: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `seckill: ${err instanceof Error ? (err.stack ?? err.message) : messageOf(err)}\n`,
  );
  process.exit(1);
});
