/**
 * `npm run bench:catalogue`: what the size of the catalogue costs. For 0, 1 000 and 10 000 ended
 * sales (seeded pipelined, one segment each) beside one live sale with an order still in its
 * outbox: Redis commands and time of an order lookup (an existing id, a missing one, a missing id
 * of the older format), the sweeper's commands per tick (the first after an upgrade, which
 * archives the quiet sales, then a steady one), and the time from `seckill up` to /readyz 200 on
 * that data (a restart: the data migrations already applied). Then, for --quiet 100,1000,10000
 * products seeded for a sale tomorrow (4 segments each) and nothing sold, the Redis commands a
 * second of a running `seckill up` (its API and worker: the sweeper every 5 s), counted by the
 * server (INFO's total_commands_processed) over 20 s, 85 s after the start (seeding touched every
 * product: one is skipped once untouched for 70 s before a sweep that found it quiet). Then, the
 * same way, for --rooms 100,1000 products with a waiting room and nobody in line: seeded for a
 * sale tomorrow, then open now (docs/waiting-room.md#what-it-costs-redis).
 *
 * Options: --sizes 0,1000,10000  --quiet 100,1000,10000  --rooms 100,1000  --lookups 20 (timed
 * repetitions)  --update (write load-tests/results/catalogue.md)  --baseline DIR (another checkout
 * of the project, its node_modules linked: its lookups, sweep and `up` measured on the same data,
 * as "before"). `--sizes '' --quiet '' --rooms 100,1000` runs the room rows alone.
 * Ends with ONE JSON line of figures.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createDb, type Db } from '../../src/db/index.js';
import { CATALOGUE_FIELD } from '../../src/inventory/records/hash-fields.js';
import {
  createInventory,
  migrateRedisData,
  mintOrderId,
  readMeta,
  seedProduct,
  type SeedSpec,
} from '../../src/inventory/index.js';
import { queueSeedSegment } from '../../src/inventory/catalogue/protocol.js';
import { freePort } from '../../src/launcher/process.js';
import { countCommands } from '../../src/redis/command-count.js';
import { Keys } from '../../src/redis/keys.js';
import { registerScripts } from '../../src/redis/scripts.js';
import { ROOT, until } from './processes.js';
import { machine, percentile, progress, saveRun, table } from './report.js';
import { benchStack } from './stack.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const { values: opt } = parseArgs({
  options: {
    sizes: { type: 'string', default: '0,1000,10000' },
    quiet: { type: 'string', default: '100,1000,10000' },
    rooms: { type: 'string', default: '100,1000' },
    lookups: { type: 'string', default: '20' },
    baseline: { type: 'string' },
    update: { type: 'boolean', default: false },
  },
});
const SIZES = opt.sizes.split(',').filter(Boolean).map(Number);
const QUIET = opt.quiet.split(',').filter(Boolean).map(Number);
const ROOMS = opt.rooms.split(',').filter(Boolean).map(Number);
/** The settings of the rooms nobody is in (the room rows). */
const IDLE_ROOM = { admitPerSecond: 50, maxActive: 200, admittedForSeconds: 120 };
const LOOKUPS = Number(opt.lookups);
const PREFIX = 'bcat';
const QUEUE_PREFIX = '{bcatq}';
const keys = new Keys(PREFIX);

/** What a checkout of the project offers this bench (this one, or --baseline's). */
interface Code {
  label: string;
  root: string;
  lookup(redis: Redis, db: Db): { find(id: string, reader: object): Promise<unknown> };
  sweep(deps: { redis: Redis; db: Db }): Promise<unknown>;
}

async function codeAt(root: string, label: string): Promise<Code> {
  const services = await import(join(root, 'src', 'services', 'index.ts'));
  const orders = await import(join(root, 'src', 'orders', 'index.ts'));
  const inventory = await import(join(root, 'src', 'inventory', 'index.ts'));
  const K = (await import(join(root, 'src', 'redis', 'keys.ts'))).Keys;
  return {
    label,
    root,
    // a checkout whose lookup takes ports (PendingOrderStore, OrdersRepository), or an older
    // one that takes the connections
    lookup: (redis, db) =>
      new services.OrderLookup(
        inventory.PendingOrderStore
          ? {
              pending: new inventory.PendingOrderStore(redis, new K(PREFIX)),
              rows: new orders.OrdersRepository(db),
            }
          : { redis, keys: new K(PREFIX), db },
      ),
    // a checkout whose sweeper takes ports (OrderStore, OrdersRepository), or an older one
    // that takes the connections
    sweep: (deps) =>
      orders.sweep(
        inventory.OrderStore
          ? {
              ...deps,
              store: new inventory.OrderStore(deps.redis, new K(PREFIX)),
              rows: new orders.OrdersRepository(deps.db),
            }
          : { ...deps, keys: new K(PREFIX) },
      ),
  };
}

/** `size` ended sales of one segment each, as the seed leaves them, pipelined. */
async function seedArchive(redis: Redis, size: number): Promise<void> {
  registerScripts(redis);
  const endedAt = Date.now() - 86_400_000;
  const CHUNK = 1_000;
  for (let from = 0; from < size; from += CHUNK) {
    const p = redis.pipeline();
    for (let i = from; i < Math.min(size, from + CHUNK); i++) {
      const id = `ended-${i}`;
      const n = i + 1;
      p.hset(keys.product(id).meta, {
        epoch: 1,
        total: 10,
        segments: 1,
        strategy: 'lockfree',
        startsAt: 0,
        endsAt: endedAt,
        limit: 1,
        soldOut: 0,
        payWithin: 0,
        token: 0,
        maxSegments: 1,
        n,
      });
      queueSeedSegment(p, keys.segment(id, 0), {
        epoch: 1,
        stock: 10,
        startsAt: 0,
        endsAt: endedAt,
        limitPerUser: 1,
        payWithinSeconds: 0,
      });
      p.sadd(keys.products(), id);
      p.hset(
        keys.catalogue(),
        `${CATALOGUE_FIELD.number}${n}`,
        id,
        `${CATALOGUE_FIELD.product}${id}`,
        n,
      );
    }
    await p.exec();
  }
  await redis.hset(keys.catalogue(), CATALOGUE_FIELD.seq, size);
}

/** Commands and median ms of `fn` (run LOOKUPS times). */
async function measure(redis: Redis, fn: () => Promise<unknown>) {
  const count = countCommands(redis);
  await fn();
  const commands = count.total();
  count.stop();
  const ms: number[] = [];
  for (let i = 0; i < LOOKUPS; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return {
    commands,
    ms: percentile(
      ms.sort((a, b) => a - b),
      50,
    ),
  };
}

/** `seckill up` of `root` on the bench's Redis and PostgreSQL: ms until /readyz answers 200. */
async function upUntilReady(root: string, env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'seckill-bench-up-'));
  const t = performance.now();
  const c = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli.ts'), 'up'], {
    cwd: root,
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      AUTH_MODE: 'dev',
      ...NO_RATE_LIMITS,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await until(
      `${root}: /readyz`,
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
      600_000,
    );
    return performance.now() - t;
  } finally {
    c.kill('SIGTERM');
    await new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Commands Redis has processed (the whole server: this bench is its only client). */
async function processed(redis: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]);
}

/**
 * `seckill up` of `root` beside `size` quiet products (seeded already): Redis commands a second
 * over 20 s, after 12 s (two sweeps: the first reads every product, and may mark it quiet).
 */
async function quietCommandsPerS(root: string, env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'seckill-bench-quiet-'));
  const c = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'cli.ts'), 'up'], {
    cwd: root,
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      AUTH_MODE: 'dev',
      STOREFRONT_PORT: '0',
      // no request is sent: the limits are left at their defaults (a baseline may not know off)
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await until(
      `${root}: /readyz`,
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
      600_000,
    );
    // a product is skipped once untouched for a lease and the skew (70 s) before a sweep that
    // found it quiet: seeding touched every one just now, so the steady state comes after that
    await new Promise((r) => setTimeout(r, 85_000));
    const before = await processed(redis);
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 20_000));
    return ((await processed(redis)) - before) / ((performance.now() - t) / 1_000);
  } finally {
    c.kill('SIGTERM');
    await new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const stack = await benchStack({});
const redis = new Redis(stack.redisUrl);
const db = createDb(stack.databaseUrl);
const codes = [await codeAt(ROOT, 'this')];
if (opt.baseline) codes.push(await codeAt(opt.baseline, 'baseline'));
const rows: Array<Record<string, string | number>> = [];
const figures: Record<string, Record<string, number>> = {};
try {
  for (const size of SIZES) {
    progress(`catalogue of ${size} ended sales + 1 live`);
    await redis.flushall();
    await db.deleteFrom('orders').execute();
    await seedArchive(redis, size);
    // one live sale, seeded the usual way, and one order still only in its outbox
    await seedProduct({ redis, keys, db }, 'live', {
      total: 1_000,
      segments: 4,
      strategy: 'lockfree',
    });
    const subscriber = new Redis(stack.redisUrl, { lazyConnect: true });
    const inv = createInventory({
      redis,
      subscriber,
      keys,
      lock: { waitMs: 200, leaseMs: 2_000, queueMs: 200 },
    });
    const sold = await inv.sale.purchase({ productId: 'live', userId: 'buyer', quantity: 1 });
    if (sold.kind !== 'sold') throw new Error(`the live sale's purchase ended ${sold.kind}`);
    await inv.close();
    subscriber.disconnect();
    const number = (await readMeta({ redis, keys }, 'live'))!.number;
    const ids = {
      existing: sold.order.orderId,
      missing: mintOrderId(number),
      legacy: randomUUID(),
    };

    // an upgrade: the data migrations run once (every product numbered and made active)
    const t = performance.now();
    await migrateRedisData({ redis, keys });
    const migrateMs = performance.now() - t;

    const queue = new Queue(`bcat-${size}`, { connection: redis, prefix: QUEUE_PREFIX });
    const env = {
      REDIS_URL: stack.redisUrl,
      DATABASE_URL: stack.databaseUrl,
      KEY_PREFIX: PREFIX,
      QUEUE_PREFIX,
    };
    for (const code of codes) {
      const sweepDeps = {
        redis,
        db,
        queue,
        minAgeMs: 600_000,
        claimTtlMs: 600_000,
        batchSize: 100,
      };
      const first = await measure(redis, () => code.sweep(sweepDeps));
      const steady = await measure(redis, () => code.sweep(sweepDeps));
      const lookup = code.lookup(redis, db);
      const existing = await measure(redis, () => lookup.find(ids.existing, { userId: 'buyer' }));
      const missing = await measure(redis, () => lookup.find(ids.missing, { userId: 'buyer' }));
      const legacy = await measure(redis, () => lookup.find(ids.legacy, { userId: 'buyer' }));
      progress(`${code.label}: seckill up until ready`);
      const restartMs = await upUntilReady(code.root, env);
      const f = {
        lookupExistingCmds: existing.commands,
        lookupExistingMs: existing.ms,
        lookupMissingCmds: missing.commands,
        lookupMissingMs: missing.ms,
        lookupLegacyMissingCmds: legacy.commands,
        sweepFirstTickCmds: first.commands,
        sweepTickCmds: steady.commands,
        restartMs,
        ...(code.label === 'this' && { firstStartMigrationsMs: migrateMs }),
      };
      figures[`${code.label}-${size}`] = f;
      rows.push({
        code: code.label,
        products: size + 1,
        'lookup cmds (existing/missing/v4)': `${f.lookupExistingCmds}/${f.lookupMissingCmds}/${f.lookupLegacyMissingCmds}`,
        'lookup ms (existing/missing)': `${f.lookupExistingMs.toFixed(1)}/${f.lookupMissingMs.toFixed(1)}`,
        'sweep cmds (1st/steady)': `${f.sweepFirstTickCmds}/${f.sweepTickCmds}`,
        'up to ready s': restartMs / 1000,
        'migrations once s': code.label === 'this' ? migrateMs / 1000 : '-',
        'quiet Redis cmds/s': '-',
      });
    }
    await queue.close();
  }
  const tomorrow = new Date(Date.now() + 86_400_000);
  const idleRows: Array<{ kind: string; size: number; spec: Partial<SeedSpec> }> = [
    ...QUIET.map((size) => ({ kind: 'quiet', size, spec: { startsAt: tomorrow } })),
    ...ROOMS.flatMap((size) => [
      { kind: 'rooms tomorrow', size, spec: { startsAt: tomorrow, waitingRoom: IDLE_ROOM } },
      { kind: 'rooms open, nobody in line', size, spec: { waitingRoom: IDLE_ROOM } },
    ]),
  ];
  for (const { kind, size, spec } of idleRows) {
    progress(`${size} ${kind} products, nothing sold: seckill up's commands/s`);
    await redis.flushall();
    await db.deleteFrom('orders').execute();
    const CHUNK = 200;
    for (let from = 0; from < size; from += CHUNK) {
      await Promise.all(
        Array.from({ length: Math.min(CHUNK, size - from) }, (_, i) =>
          seedProduct({ redis, keys, db }, `quiet-${from + i}`, {
            total: 100,
            segments: 4,
            strategy: 'lockfree',
            ...spec,
          }),
        ),
      );
    }
    const env = {
      REDIS_URL: stack.redisUrl,
      DATABASE_URL: stack.databaseUrl,
      KEY_PREFIX: PREFIX,
      QUEUE_PREFIX,
    };
    for (const code of codes) {
      const perS = await quietCommandsPerS(code.root, env);
      figures[`${code.label}-${kind.split(/[ ,]+/).join('-')}-${size}`] = {
        quietCommandsPerS: perS,
      };
      rows.push({
        code: code.label,
        products: `${size} ${kind}`,
        'lookup cmds (existing/missing/v4)': '-',
        'lookup ms (existing/missing)': '-',
        'sweep cmds (1st/steady)': '-',
        'up to ready s': '-',
        'migrations once s': '-',
        'quiet Redis cmds/s': Math.round(perS),
      });
    }
  }
} finally {
  redis.disconnect();
  await db.destroy();
  await stack.stop();
}

const m = machine();
const out = [
  `bench:catalogue on ${m.cpus} cpus (${m.model}), node ${m.node}; lookups: median of ${LOOKUPS}`,
  '',
  table(rows),
].join('\n');
console.log(`\n${out}\n`);
saveRun('catalogue', out, opt.update);
console.log(
  JSON.stringify({ bench: 'catalogue', sizes: SIZES, quiet: QUIET, rooms: ROOMS, figures }),
);
