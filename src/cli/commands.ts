/** The commands besides `up`: serve, worker, migrate, seed, reconcile. */
import { parseArgs } from 'node:util';
import { forkApiProcesses, isApiProcess, serveApiProcess } from '../composition/api-processes.js';
import { createCore, type Core } from '../composition/core.js';
import {
  apiServices,
  serveApi,
  serveWorkerProbes,
  startOrderQueue,
  startOrderWorker,
} from '../composition/roles.js';
import { loadConfig, type Config } from '../config/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { migrateRedisData, SaleError } from '../inventory/index.js';
import { closeOnSignals, Lifecycle } from '../lifecycle.js';
import { createRegistry } from '../metrics.js';
import { createLogger } from '../log.js';
import { seedRequest, seedSpecOf } from '../services/index.js';
import { ExitError, progress } from './output.js';
import { warnDevAuth } from './up.js';

/** A core for a one-shot command (dev auth: no JWT secret needed), closed when `fn` ends. */
async function withCore<T>(fn: (core: Core) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const core = createCore(config, createLogger(config));
  try {
    return await fn(core);
  } finally {
    await core.lifecycle.close();
  }
}

export async function migrate(): Promise<void> {
  await withCore(async (core) => {
    const applied = await migrateToLatest(core.db);
    progress(
      applied.length ? `applied migrations: ${applied.join(', ')}` : 'database is up to date',
    );
    const ran = await migrateRedisData(core);
    progress(
      ran.length ? `applied Redis data migrations: ${ran.join(', ')}` : 'Redis data is up to date',
    );
  });
}

export async function serve(config: Config = loadConfig()): Promise<void> {
  if (isApiProcess()) return serveApiProcess(config);
  const logger = createLogger(config);
  warnDevAuth(config);
  if (config.api.processes > 1) {
    // the primary only supervises: the API processes hold the connections
    const lifecycle = new Lifecycle(logger);
    closeOnSignals(lifecycle, logger, config.http.shutdownTimeoutMs + 5_000);
    await forkApiProcesses({
      count: config.api.processes,
      registry: createRegistry(),
      logger,
      lifecycle,
      stopTimeoutMs: config.http.shutdownTimeoutMs,
    }).ready;
    progress(
      `${config.api.processes} API processes listening on ${config.http.host}:${config.http.port}`,
    );
    return;
  }
  const core = createCore(config, logger);
  closeOnSignals(core.lifecycle, logger, config.http.shutdownTimeoutMs);
  const queue = startOrderQueue(core);
  await serveApi(core, apiServices(core, queue), [queue]);
}

export async function worker(): Promise<void> {
  const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const logger = createLogger(config);
  const core = createCore(config, logger);
  closeOnSignals(core.lifecycle, logger, config.http.shutdownTimeoutMs);
  await startOrderWorker(core, startOrderQueue(core));
  const probes = await serveWorkerProbes(core).catch((err: NodeJS.ErrnoException) => {
    throw new ExitError(
      err.code === 'EADDRINUSE'
        ? `WORKER_PORT ${config.http.workerPort} is already in use: set WORKER_PORT to a free port (0: none)`
        : `WORKER_PORT ${config.http.workerPort}: ${err.message}`,
      1,
    );
  });
  const o = config.orders;
  progress(
    `order worker running: concurrency ${o.workerConcurrency}, ` +
      `batches of ${o.workerBatchSize}, sweeping every ${o.sweepIntervalMs} ms` +
      (probes
        ? `; /healthz /readyz /metrics on ${config.http.host}:${config.http.workerPort}`
        : ''),
  );
}

export const SEED_OPTIONS = {
  total: { type: 'string' },
  segments: { type: 'string' },
  strategy: { type: 'string', default: 'segmented' },
  'limit-per-user': { type: 'string' },
  'pay-within': { type: 'string' },
  'require-sale-token': { type: 'boolean', default: false },
  'starts-at': { type: 'string' },
  'ends-at': { type: 'string' },
  force: { type: 'boolean', default: false },
} as const;

type SeedValues = ReturnType<typeof parseArgs<{ options: typeof SEED_OPTIONS }>>['values'];

export async function seed(productId: string, values: SeedValues): Promise<void> {
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const parsed = seedRequest.safeParse({
    total: num(values.total),
    segments: num(values.segments),
    strategy: values.strategy,
    limitPerUser: num(values['limit-per-user']),
    payWithinSeconds: num(values['pay-within']),
    requireSaleToken: values['require-sale-token'] || undefined,
    startsAt: values['starts-at'],
    endsAt: values['ends-at'],
  });
  if (!parsed.success) {
    const flag = (path: PropertyKey[]) => {
      const field = String(path[0] ?? '');
      return field === 'payWithinSeconds'
        ? 'pay-within'
        : field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    };
    const lines = parsed.error.issues.map((i) => `  --${flag(i.path)}: ${i.message}`);
    throw new ExitError(`invalid seed:\n${lines.join('\n')}`, 2);
  }
  await withCore(async (core) => {
    try {
      const r = await core.products.seed(productId, seedSpecOf(parsed.data), {
        force: values.force ?? false,
      });
      process.stdout.write(`${JSON.stringify(r)}\n`);
    } catch (err) {
      if (err instanceof SaleError) {
        const hint = err.code === 'sale-live' ? ': add --force' : '';
        throw new ExitError(`${err.message}${hint}`, 1);
      }
      throw err;
    }
  });
}

export async function reconcile(productId: string): Promise<void> {
  await withCore(async (core) => {
    const report = await core.products.reconcile(productId);
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
  });
}
