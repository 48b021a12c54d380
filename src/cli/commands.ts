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
import { configuredKinds } from '../config/door.js';
import { loadConfig, type Config } from '../config/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { migrateRedisData, SaleError, type SeedResult, type SeedSpec } from '../inventory/index.js';
import { runningStackDefaults } from '../launcher/stack-file.js';
import { closeOnSignals, Lifecycle } from '../lifecycle.js';
import { createRegistry } from '../metrics.js';
import { createLogger } from '../log.js';
import {
  audited,
  challengeRefusal,
  seedRefusal,
  seedRequest,
  seedSpecOf,
} from '../services/index.js';
import { AuditRepository } from '../db/audit-repository.js';
import { userInfo } from 'node:os';
import { ExitError, progress } from './output.js';
import { SEED_OPTIONS } from './seed-options.js';
import { assertStoresAnswer, LocalClusterNode, type Store } from './stores.js';
import { sayAdminApi, warnDevAuth } from './up.js';

/**
 * A core for a one-shot command (dev auth: no JWT secret needed; logs errors only, unless
 * LOG_LEVEL says otherwise: its output is for a person), closed when `fn` ends. The stores it
 * needs answer first, or it ends with one line saying which did not.
 */
export async function withCore<T>(stores: Store[], fn: (core: Core) => Promise<T>): Promise<T> {
  const oneShot = { AUTH_MODE: 'dev', LOG_LEVEL: 'error' };
  // a running `up` on DATA_DIR says where its stores are (what the environment leaves unset)
  const { dataDir } = loadConfig(process.env, oneShot).launcher;
  const defaults = { ...oneShot, ...runningStackDefaults(dataDir, process.env) };
  const first = loadConfig(process.env, defaults);
  let core = createCore(first, createLogger(first));
  try {
    try {
      await assertStoresAnswer(core, stores);
    } catch (err) {
      if (!(err instanceof LocalClusterNode)) throw err;
      // LOCAL_REDIS_PORT names a cluster's node (LOCAL_REDIS_SHARDS left unset): reach it as one
      await core.lifecycle.close();
      const env = { ...process.env, LOCAL_REDIS_PORT: undefined, LOCAL_REDIS_SHARDS: undefined };
      const config = loadConfig(env, { ...defaults, REDIS_CLUSTER_NODES: err.node });
      core = createCore(config, createLogger(config));
      await assertStoresAnswer(core, stores);
    }
    return await fn(core);
  } finally {
    await core.lifecycle.close();
  }
}

export async function migrate(): Promise<void> {
  await withCore(['postgres', 'redis'], async (core) => {
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
  sayAdminApi(config);
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

type SeedValues = ReturnType<typeof parseArgs<{ options: typeof SEED_OPTIONS }>>['values'];

/** The flags whose value is a whole number, and the field each fills. */
const NUMBER_FLAGS = {
  total: 'total',
  segments: 'segments',
  'limit-per-user': 'limitPerUser',
  'pay-within': 'payWithinSeconds',
  'admit-per-second': 'admitPerSecond',
  'max-active': 'maxActive',
  'admitted-for': 'admittedForSeconds',
  price: 'priceAmount',
  'buy-within': 'buyWithinSeconds',
  'max-entries-per-block': 'maxEntriesPerAddressBlock',
  'challenge-floor-ms': 'challengeFloorMs',
} as const;

/** The waiting room's fields among the number flags: any of them given seeds a room. */
const ROOM_FIELDS = ['admitPerSecond', 'maxActive', 'admittedForSeconds'] as const;

const FLAG_OF: Record<string, string> = Object.fromEntries(
  Object.entries(NUMBER_FLAGS).map(([flag, field]) => [field, flag]),
);
/** The draw's fields -> their flags (a draw's problems name the flag that set the field). */
const DRAW_FLAG_OF: Record<string, string> = {
  entriesOpenAt: 'draw-opens-at',
  entriesCloseAt: 'draw-closes-at',
  buyWithinSeconds: 'buy-within',
  maxEntriesPerAddressBlock: 'max-entries-per-block',
  denyList: 'deny-list',
};
const flagOf = (field: string) =>
  FLAG_OF[field] ?? field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

export async function seed(productId: string, values: SeedValues): Promise<void> {
  const problems: string[] = [];
  const numbers: Record<string, number | undefined> = {};
  for (const [flag, field] of Object.entries(NUMBER_FLAGS)) {
    const text = values[flag as keyof typeof NUMBER_FLAGS];
    if (text === undefined) continue;
    if (/^\s*-?\d+\s*$/.test(text)) numbers[field] = Number(text);
    else
      problems.push(
        `  --${flag}: expected a whole number, e.g. --${flag} 100 (got ${JSON.stringify(text)})`,
      );
  }
  const room = Object.fromEntries(ROOM_FIELDS.map((f) => [f, numbers[f]]));
  for (const f of ROOM_FIELDS) delete numbers[f];
  const { priceAmount, buyWithinSeconds, maxEntriesPerAddressBlock, challengeFloorMs, ...rest } =
    numbers;
  const drawn = values['draw-closes-at'] !== undefined || buyWithinSeconds !== undefined;
  const priced = priceAmount !== undefined || values.currency !== undefined;
  const parsed = seedRequest.safeParse({
    ...rest,
    price: priced ? { amount: priceAmount, currency: values.currency } : undefined,
    waitingRoom: ROOM_FIELDS.some((f) => room[f] !== undefined) ? room : undefined,
    strategy: values.strategy,
    requireSaleToken: values['require-sale-token'] || undefined,
    startsAt: values['starts-at'],
    endsAt: values['ends-at'],
    challenge: challengeOf(values.challenge, challengeFloorMs),
    draw: drawn
      ? {
          entriesOpenAt: values['draw-opens-at'] ?? new Date().toISOString(),
          entriesCloseAt: values['draw-closes-at'],
          buyWithinSeconds,
          maxEntriesPerAddressBlock,
          denyList: values['deny-list']?.split(',').filter(Boolean),
        }
      : undefined,
  });
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const field = i.path[0] === 'waitingRoom' ? i.path[1] : i.path[0];
      const drawFlag = i.path[0] === 'draw' ? DRAW_FLAG_OF[String(i.path[1] ?? '')] : undefined;
      const flag =
        i.path[0] === 'price'
          ? i.path[1] === 'currency'
            ? 'currency'
            : 'price'
          : i.path[0] === 'challenge'
            ? i.path[1] === 'floorMs'
              ? 'challenge-floor-ms'
              : 'challenge'
            : (drawFlag ?? flagOf(String(field ?? '')));
      // a number flag that was not a number is said once, above
      if (!problems.some((p) => p.startsWith(`  --${flag}:`)))
        problems.push(`  --${flag}: ${i.message}`);
    }
  }
  if (problems.length > 0 || !parsed.success) {
    throw new ExitError(`invalid seed:\n${problems.join('\n')}`, 2);
  }
  const spec = seedSpecOf(parsed.data);
  await withCore(['redis', 'postgres'], async (core) => {
    const refused = seedRefusal(parsed.data, core.config.admission.saleTokenSecret !== undefined);
    if (refused) {
      const flag = spec.draw
        ? '--draw-closes-at'
        : spec.waitingRoom
          ? '--admit-per-second'
          : '--require-sale-token';
      throw new ExitError(`invalid seed:\n  ${flag}: ${refused}`, 2);
    }
    const unchecked = challengeRefusal(
      parsed.data,
      configuredKinds(core.config.admission.challenge),
    );
    if (unchecked) throw new ExitError(`invalid seed:\n  --challenge: ${unchecked}`, 2);
    const discards = values.discard?.split(',') ?? [];
    const unknown = discards.filter((d) => d !== 'line' && d !== 'purchase-counts');
    if (unknown.length) {
      throw new ExitError(
        `invalid seed:
  --discard: line, purchase-counts (got ${unknown.join(', ')})`,
        2,
      );
    }
    const user = userInfo().username;
    const change = {
      actor: { via: 'cli' as const, session: user, operator: values.operator ?? user },
      action: 'seed',
      productId,
      request: { ...parsed.data, force: values.force, discard: values.discard },
    };
    try {
      const r = await audited(new AuditRepository(core.db), change, () =>
        core.products.seed(productId, spec, {
          force: values.force ?? false,
          discard: {
            line: discards.includes('line'),
            purchaseCounts: discards.includes('purchase-counts'),
          },
        }),
      );
      process.stdout.write(values.json ? `${JSON.stringify(r)}\n` : `${seedSummary(r, spec)}\n`);
    } catch (err) {
      if (err instanceof SaleError) {
        const hint =
          err.code === 'sale-live'
            ? ': add --force'
            : err.code === 'line-discarded'
              ? ' (--discard line)'
              : '';
        throw new ExitError(`${err.message}${hint}`, 1);
      }
      throw err;
    }
  });
}

/** `--challenge` (and pow's `--challenge-floor-ms`) as the seed's field: off is null. */
function challengeOf(kind: string | undefined, floorMs: number | undefined): unknown {
  if (kind === undefined) return floorMs === undefined ? undefined : { kind: 'pow', floorMs };
  if (kind === 'off') return null;
  return kind === 'pow' ? { kind, floorMs } : { kind };
}

const roomLine = (room: NonNullable<SeedSpec['waitingRoom']>) =>
  `${room.admitPerSecond}/s, at most ${room.maxActive} active, admitted for ${room.admittedForSeconds} s`;

/** What a seed did, for a person. */
function seedSummary(result: SeedResult, spec: SeedSpec): string {
  const when = (date: Date | undefined, none: string) => (date ? date.toISOString() : none);
  return [
    `seeded "${result.productId}" (epoch ${result.epoch}): ${spec.total} units over ${result.segments.length} ` +
      `segment${result.segments.length === 1 ? '' : 's'}, ${spec.strategy} strategy`,
    `  per buyer   ${spec.limitPerUser ?? 1}`,
    `  price       ${spec.price ? `${spec.price.amount} ${spec.price.currency} (minor units) a unit` : 'none'}`,
    `  payment     ${spec.payWithinSeconds ? `within ${spec.payWithinSeconds} s, or the units go back on sale` : 'none (sales are final)'}`,
    `  sale token  ${spec.requireSaleToken || spec.waitingRoom ? 'required' : 'not required'}`,
    ...(spec.waitingRoom ? [`  room        ${roomLine(spec.waitingRoom)}`] : []),
    `  on sale     from ${when(spec.startsAt, 'now')} until ${when(spec.endsAt, 'sold out')}`,
  ].join('\n');
}

export async function reconcile(productId: string): Promise<void> {
  await withCore(['redis', 'postgres'], async (core) => {
    const report = await core.products.reconcile(productId);
    if (!report) throw new ExitError(`no product "${productId}"`, 1);
    const lines = [
      `product ${report.productId} (epoch ${report.epoch})`,
      `  seeded     ${report.seeded}`,
      ...(report.added ? [`  added      ${report.added}   (put on sale by operators)`] : []),
      ...(report.taken
        ? [`  taken      ${report.taken}   (unsold units taken off sale by operators)`]
        : []),
      ...(report.added || report.taken ? [`  on sale    ${report.total}`] : []),
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
