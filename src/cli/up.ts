/**
 * `seckill up`: the whole stack on one machine. Local redis-server and PostgreSQL (unless URLs
 * are given), migrations, a demo sale, then the API and the order workers in this process;
 * Ctrl-C stops everything it started, in reverse order.
 */
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import { forkApiProcesses, isApiProcess, serveApiProcess } from '../composition/api-processes.js';
import { createCore, type Core } from '../composition/core.js';
import { apiServices, serveApi, startOrderQueue, startOrderWorker } from '../composition/roles.js';
import { loadConfig, type Config } from '../config/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { migrateRedisData } from '../inventory/index.js';
import { messageOf } from '../errors.js';
import { lockDataDir } from '../launcher/data-dir-lock.js';
import {
  localAdminToken,
  localChallengePowSecret,
  localSaleTokenSecret,
  localVapidKeys,
  localWebhookSecret,
  startLocalServices,
} from '../launcher/local-stack.js';
import { localBeacon, localBeaconVars, serveLocalBeacon } from '../launcher/local-beacon.js';
import { assertPortFree, LaunchError } from '../launcher/process.js';
import { writeStackFile } from '../launcher/stack-file.js';
import { closeOnSignals, Lifecycle } from '../lifecycle.js';
import { createLogger } from '../log.js';
import { pingRedis } from '../redis/connection.js';
import { progress, redactUrl } from './output.js';
import { startStorefront } from './storefront.js';
import { tryLine } from './try-line.js';
import { assertStoresAnswer } from './stores.js';

export async function up(): Promise<void> {
  const first = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const { dataDir, localBeaconPort } = first.launcher;
  const beacon = localBeacon(process.env, dataDir, localBeaconPort);
  const config = loadConfig(process.env, {
    AUTH_MODE: 'dev',
    ...storefrontOrigins(first),
    ADMIN_TOKEN: localAdminToken(first.launcher.dataDir),
    PAYMENT_WEBHOOK_SECRET: localWebhookSecret(first.launcher.dataDir),
    SALE_TOKEN_SECRET: localSaleTokenSecret(first.launcher.dataDir),
    // the built-in door: `seed --challenge pow` needs nothing set (docs/fairness.md)
    CHALLENGE_POW_SECRET: localChallengePowSecret(first.launcher.dataDir),
    ...vapid(first),
    // a developer's own machine: a webhook receiver on localhost is the point (docs/events.md)
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // no internet needed for a draw: its randomness from this machine's chain (docs/draw.md)
    ...(beacon && localBeaconVars(beacon)),
  });
  // API_PROCESSES > 1: this is one of the forked API processes (the primary runs the rest)
  if (isApiProcess()) return serveApiProcess(config);
  const logger = createLogger(config);
  // before anything starts: the API's port, then the data folder (one `up` each)
  await assertPortFree(config.http.port, config.http.host).catch(() => {
    throw new LaunchError(
      `PORT ${config.http.port} is already in use on ${config.http.host}: stop what listens ` +
        'there, or set PORT to a free port',
    );
  });
  const releaseDataDir = lockDataDir(config.launcher.dataDir);
  const lifecycle = new Lifecycle(logger);
  lifecycle.add('data folder lock', async () => releaseDataDir());
  closeOnSignals(lifecycle, logger, Math.max(config.http.shutdownTimeoutMs, 30_000));
  try {
    // a Ctrl-C (or a closed output pipe) while a server is starting stops it once it is up
    await lifecycle.starting(
      startLocalServices({
        config,
        lifecycle,
        progress,
        // A supervisor restarts a launcher that exits non-zero: stop the rest, bounded, and go.
        onCrash: (name, code, logFile) => {
          // a plain line among the launcher's other [seckill] lines, not a JSON log record
          progress(
            `a local server exited unexpectedly: ${name} (exit ${code}; log ${logFile}); stopping everything`,
          );
          void lifecycle.closeWithin(config.http.shutdownTimeoutMs).then(() => process.exit(1));
        },
        onNodeExit: (name, code, logFile, restartInMs) =>
          logger.error(
            { service: name, code, logFile, restartInMs },
            'a Redis Cluster node exited: its replica takes over if it has one (until then its ' +
              'segments answer 503); the launcher restarts it, and it rejoins as a replica',
          ),
        onNodeRestart: (name, err) =>
          err
            ? logger.error(
                { service: name, err: messageOf(err) },
                'a Redis Cluster node did not restart; trying again',
              )
            : logger.warn({ service: name }, 'a Redis Cluster node was restarted'),
      }),
    );
    if (lifecycle.isClosing) return; // the shutdown under way stops what started
    // the CLI in a second terminal finds these stores from here (removed on exit)
    const removeStackFile = writeStackFile(config, process.env);
    lifecycle.add('stack file', async () => removeStackFile());
    const core = createCore(config, logger, lifecycle);
    // a given DATABASE_URL that does not answer: one line, not the migrator's error
    await assertStoresAnswer(core, ['postgres']);
    const applied = await migrateToLatest(core.db);
    if (applied.length) progress(`applied migrations: ${applied.join(', ')}`);
    warnDevAuth(config);
    if (beacon) {
      const server = await serveLocalBeacon(beacon);
      lifecycle.add('local beacon', () => new Promise((r) => server.close(() => r())));
      progress(
        `draws take their randomness from a local beacon chain on 127.0.0.1:${beacon.port} ` +
          `(key in ${resolve(dataDir, 'beacon-key')}; DRAW_CHAIN_INFO for drand's quicknet)`,
      );
    }
    const queue = startOrderQueue(core);
    // The demo seed and the worker need Redis (BullMQ would wait for it forever). A given
    // REDIS_URL that does not answer must not stop the API: it serves /healthz, and /readyz
    // says 503 naming Redis, until Redis answers; then the rest starts.
    const redisParts = async () => {
      const ran = await migrateRedisData(core);
      if (ran.length) progress(`applied Redis data migrations: ${ran.join(', ')}`);
      await seedDemo(core);
      await startOrderWorker(core, queue);
    };
    const redisDown = await redisProblem(core);
    if (!redisDown) await redisParts();
    await serveApis(core, queue);
    await serveStorefront(core);
    if (redisDown) {
      progress(
        `Redis at ${redactUrl(config.redis.url)} does not answer, ${redisDown}: serving ` +
          '/healthz, and /readyz answers 503 until it does; the demo sale and the order workers start then',
      );
      void startWhenRedisAnswers(core, redisParts).then(
        (started) => started && printReady(config),
        (err: unknown) => {
          progress(`start-up failed after Redis came back: ${messageOf(err)}; stopping everything`);
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

/** Web Push keys kept in the data folder, unless the environment gives some. */
function vapid(config: Config): Record<string, string> {
  if (config.push) return {};
  const keys = localVapidKeys(config.launcher.dataDir);
  return {
    VAPID_PUBLIC_KEY: keys.publicKey,
    VAPID_PRIVATE_KEY: keys.privateKey,
    VAPID_SUBJECT: 'mailto:seckill@localhost',
  };
}

/** The storefront's origins, which the API then allows (CORS_ORIGINS, unless given). */
function storefrontOrigins(config: Config): Record<string, string> {
  const port = config.launcher.storefrontPort;
  if (port === 0) return {};
  return { CORS_ORIGINS: `http://127.0.0.1:${port},http://localhost:${port}` };
}

/** The storefront example on its own port (examples/storefront, src/cli/storefront.ts). */
async function serveStorefront(core: Core): Promise<void> {
  const { config } = core;
  const port = config.launcher.storefrontPort;
  if (port === 0) return;
  try {
    const server = await startStorefront({
      host: config.http.host,
      port,
      api: `http://127.0.0.1:${config.http.port}`,
      productId: demoRoomId(config),
      webhookSecret: config.payments.webhookSecret!,
    });
    core.lifecycle.add('storefront', () => new Promise((r) => server.close(() => r())));
    progress(
      `storefront example: http://127.0.0.1:${port}/ (its own origin; the API allows it: CORS_ORIGINS)`,
    );
  } catch (err) {
    progress(
      `storefront example not served: ${messageOf(err)} (STOREFRONT_PORT=${port}; 0 turns it off)`,
    );
  }
}

/** The API: in this process, or API_PROCESSES forked ones sharing the port. */
async function serveApis(core: Core, queue: Queue): Promise<void> {
  const { config } = core;
  if (config.api.processes === 1) {
    await serveApi(core, apiServices(core, queue), [queue]);
    return;
  }
  await forkApiProcesses({
    count: config.api.processes,
    registry: core.registry,
    logger: core.logger,
    lifecycle: core.lifecycle,
    stopTimeoutMs: config.http.shutdownTimeoutMs,
  }).ready;
  progress(
    `${config.api.processes} API processes listening on ${config.http.host}:${config.http.port}; ` +
      'the order workers run in this one',
  );
}

/** Why Redis does not answer a PING within a second, or undefined when it does. */
async function redisProblem(core: Core): Promise<string | undefined> {
  const timeout = new Promise<string>((r) => setTimeout(r, 1_000, 'no answer within 1 s').unref());
  return Promise.race([pingRedis(core.redis).then(() => undefined, messageOf), timeout]);
}

/** Polls Redis each second until it answers, then runs `start`; false if shutdown came first. */
async function startWhenRedisAnswers(core: Core, start: () => Promise<void>): Promise<boolean> {
  while (!core.lifecycle.isClosing) {
    if (!(await redisProblem(core))) {
      if (core.lifecycle.isClosing) return false;
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
  progress(tryLine(base, config.demo.productId, config.auth));
}

/** The storefront's drop: the demo sale's id with `-room`. */
const demoRoomId = (config: Config) => `${config.demo.productId}-room`;

/** The demo sales `up` ends with (seeded once; a later `up` leaves them as they are). */
async function seedDemo(core: Core): Promise<void> {
  const { productId, stock } = core.config.demo;
  const existing = await core.products.state(productId);
  if (existing) {
    progress(`demo sale "${productId}": ${existing.status}, ${existing.remaining} left`);
  } else {
    await core.products.seed(productId, { total: stock, segments: 4, strategy: 'segmented' });
    progress(`seeded demo sale "${productId}": ${stock} units over 4 segments, 1 per shopper`);
  }
  // the storefront's drop: behind a waiting room, paid within 5 minutes
  const roomId = demoRoomId(core.config);
  const room = await core.products.state(roomId);
  if (room) {
    progress(`demo drop "${roomId}": ${room.status}, ${room.remaining} left`);
    return;
  }
  await core.products.seed(roomId, {
    total: stock,
    segments: 4,
    strategy: 'segmented',
    payWithinSeconds: 300,
    waitingRoom: { admitPerSecond: 5, maxActive: 20, admittedForSeconds: 120 },
  });
  progress(
    `seeded demo drop "${roomId}": ${stock} units behind a waiting room (5 admitted a second), paid within 5 minutes`,
  );
}

/** `serve` says at start whether the admin API is reachable, and how. */
export function sayAdminApi(config: Config): void {
  const base = `http://${config.http.host}:${config.http.port}`;
  progress(
    config.auth.adminToken === undefined
      ? 'admin API disabled: ADMIN_TOKEN is not set, so /admin/* answers 403 (set ADMIN_TOKEN, ' +
          '16 characters or more, to seed and manage sales over HTTP)'
      : `admin API at ${base}/admin/ (Authorization: Bearer $ADMIN_TOKEN)`,
  );
}

export function warnDevAuth(config: Config): void {
  if (config.auth.mode !== 'dev') return;
  progress(
    '!!! AUTH_MODE=dev: the shopper id is taken from the X-User-Id header without any check. ' +
      'For demos and load tests only; never expose this process. !!!',
  );
}
