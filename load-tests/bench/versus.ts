/**
 * `npm run bench:versus -- --baseline <dir>`: this checkout's in-stock sale beside other
 * checkouts' (worktrees of older commits, built; --baseline again for each), in ONE run, rounds
 * interleaved (the order of the sides reversed every other round): what a sale that uses none of
 * the newer features (no webhook endpoint, no CORS origin, no waiting room, no key, no limit)
 * costs each tier now and then.
 *
 * Each side runs on servers of its own (a redis-server and a PostgreSQL, its own migrations), so
 * each tier's CPU is its side's alone: the API, the order worker, Redis and PostgreSQL (its
 * backends and background workers), from /proc utime+stime. `--shape split` (the default) runs
 * `seckill serve` and `seckill worker` as `npm run bench` does (the API and worker apart);
 * `--shape up` runs `seckill up` (one process), as `npm run bench:peer`'s "ours" does.
 *
 * A round of a side: wait until both sides are idle, sell lockfree N=16 for --duration s (a new
 * shopper per request), then wait until every sale is an order row and the side is idle again
 * (the relay, autovacuum): "to idle" counts that drain too, per unit sold. Prints the median of
 * the rounds per side, the per-round ratios' median, and the whole run's CPU per unit sold (every
 * second of the run, idle ones included); ends with one JSON line.
 *
 * Options: --baseline <dir> (required; repeatable) --duration 10 --rounds 6 --connections 100
 *          --shape split|up --no-build --no-write --update-report (load-tests/results/versus.md)
 *          --cpu-prof <dir> (V8 profiles of each side's processes, in <dir>/<side>/<process>)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { NO_RATE_LIMITS } from '../../src/config/index.js';
import { createRedis } from '../../src/redis/connection.js';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { cpuSeconds, type Tiers } from './cpu.js';
import { load, pickDriver } from './http-load.js';
import { ROOT, stopAll, until } from './processes.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { quiet } from './settle.js';
import { benchStack, type BenchStack } from './stack.js';

const BIG_STOCK = 10_000_000;
const SEGMENTS = 16;
const TIERS = ['API', 'worker', 'Redis', 'PG'] as const;

interface Side {
  /** `this`, `baseline` (the first --baseline), `baseline 2`, ... */
  name: string;
  dir: string;
  commit: string;
  stack: BenchStack;
  base: string;
  procs: ChildProcess[];
  tiers: Tiers;
  productId: string;
  /** a client of the side's own Redis: its outboxes say what is not yet an order row */
  probe: Redis;
}

interface Round {
  soldPerS: number;
  sold: number;
  /** CPU µs per unit sold, the sale's window alone */
  windowUs: Record<string, number>;
  /** CPU µs per unit sold, the window and the drain until the side was idle again */
  toIdleUs: Record<string, number>;
  drainMs: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? 0 : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * The limits off, as the checkout spells it: `off` since the limits have defaults; an older
 * checkout had none by default and refuses the word.
 */
function limitsOff(dir: string): NodeJS.ProcessEnv {
  const rate = join(dir, 'src', 'config', 'rate.ts');
  return existsSync(rate) && readFileSync(rate, 'utf8').includes('NO_RATE_LIMITS')
    ? { ...NO_RATE_LIMITS }
    : {};
}

const git = (dir: string, ...args: string[]) =>
  execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();

function spawnCli(
  dir: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  log: string,
  nodeFlags: string[] = [],
): ChildProcess {
  const out = openSync(log, 'a');
  const c = spawn(process.execPath, [...nodeFlags, join(dir, 'dist', 'src', 'cli.js'), ...args], {
    cwd: dir,
    env,
    stdio: ['ignore', out, out],
  });
  c.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM')
      progress(`${dir} ${args[0]} exited (${code ?? signal})`);
  });
  return c;
}

async function startSide(
  name: Side['name'],
  dir: string,
  shape: 'split' | 'up',
  work: string,
  run: string,
  profDir: string | undefined,
): Promise<Side> {
  const stack = await benchStack({ migrate: false });
  try {
    return await serveSide(name, dir, shape, work, run, stack, profDir);
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

async function serveSide(
  name: Side['name'],
  dir: string,
  shape: 'split' | 'up',
  work: string,
  run: string,
  stack: BenchStack,
  profDir: string | undefined,
): Promise<Side> {
  const prof = (what: string) =>
    profDir ? ['--cpu-prof', `--cpu-prof-dir=${join(profDir, name, what)}`] : [];
  const port = await freePort();
  const log = join(work, `${name}.log`);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    ADMIN_TOKEN,
    PORT: String(port),
    ...limitsOff(dir),
  };
  const procs: ChildProcess[] = [];
  const tiers: Tiers = { Redis: stack.redisPid, PG: stack.postgresPid };
  if (shape === 'up') {
    // `up` reads its admin token from DATA_DIR (ADMIN_TOKEN given wins): the bench's
    const data = join(work, name);
    execFileSync('mkdir', ['-p', data]);
    writeFileSync(join(data, 'admin-token'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
    const up = spawnCli(dir, ['up'], { ...env, DATA_DIR: data }, log, prof('up'));
    procs.push(up);
    tiers.API = up.pid;
  } else {
    execFileSync(process.execPath, [join(dir, 'dist', 'src', 'cli.js'), 'migrate'], {
      cwd: dir,
      env,
      stdio: 'ignore',
    });
    const served = {
      ...env,
      WORKER_PORT: '0',
      AUTH_MODE: 'dev',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'development',
    };
    const api = spawnCli(dir, ['serve'], served, log, prof('api'));
    const worker = spawnCli(dir, ['worker'], served, log, prof('worker'));
    procs.push(api, worker);
    tiers.API = api.pid;
    tiers.worker = worker.pid;
  }
  const base = `http://127.0.0.1:${port}`;
  const productId = `versus-${name.replace(/[^A-Za-z0-9]+/g, '-')}-${run}`;
  try {
    await until(
      `${name}'s API (log: ${log})`,
      async () => (await fetch(`${base}/readyz`)).ok,
      120_000,
    );
    const res = await admin(base, 'PUT', `/admin/products/${productId}?force=true`, {
      total: BIG_STOCK,
      strategy: 'lockfree',
      segments: SEGMENTS,
    });
    if (!res.ok) throw new Error(`seeding ${productId}: ${res.status} ${await res.text()}`);
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
  return {
    name,
    dir,
    commit: git(dir, 'rev-parse', '--short', 'HEAD'),
    stack,
    base,
    procs,
    tiers,
    productId,
    probe: createRedis(stack.redisUrl, { name: 'bench-versus-probe' }),
  };
}

/**
 * Orders sold and not yet rows: the entries left in the segments' outboxes (the worker deletes
 * one once its row is committed). A few Redis commands, where the reconciliation a round would
 * otherwise ask reads every order row of the product (API and PostgreSQL CPU that grows with
 * the rounds, counted in the side's drain).
 */
async function unpersisted(redis: Redis): Promise<number> {
  let n = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', '*:outbox', 'COUNT', 1000);
    cursor = next;
    for (const key of keys) n += await redis.xlen(key);
  } while (cursor !== '0');
  return n;
}

const perSale = (from: Record<string, number>, to: Record<string, number>, sold: number) =>
  Object.fromEntries(
    Object.keys(to)
      .filter((t) => from[t] !== undefined)
      .map((t) => [t, Math.round(((to[t]! - from[t]!) * 1e6) / Math.max(1, sold))]),
  );

async function main() {
  const { values } = parseArgs({
    options: {
      baseline: { type: 'string', multiple: true },
      duration: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '6' },
      connections: { type: 'string', default: '100' },
      shape: { type: 'string', default: 'split' },
      'no-build': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
    },
  });
  const shape = values.shape;
  if (!values.baseline?.length || (shape !== 'split' && shape !== 'up')) {
    process.stderr.write(
      'usage: npm run bench:versus -- --baseline <checkout, built> [--baseline <another>...]\n' +
        '         [--duration 10] [--rounds 6]\n' +
        '         [--connections 100] [--shape split|up] [--no-build] [--no-write] [--update-report]\n',
    );
    process.exit(2);
  }
  const duration = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const driver = pickDriver();
  if (driver !== 'wrk') throw new Error('bench:versus drives both sides with wrk: install wrk');
  const dirs: Record<string, string> = { this: ROOT };
  values.baseline.forEach((dir, i) => (dirs[i ? `baseline ${i + 1}` : 'baseline'] = resolve(dir)));
  if (!values['no-build']) {
    for (const dir of Object.values(dirs)) {
      progress(`building ${dir} (npm run build)`);
      execFileSync('npm', ['run', 'build', '--silent'], { cwd: dir, stdio: 'inherit' });
    }
  }
  const run = Date.now().toString(36);
  const work = mkdtempSync(join(tmpdir(), 'seckill-bench-versus-'));
  progress(`logs of every side in ${work}`);
  const sides: Side[] = [];
  const rows = new Map<string, Round[]>();
  const checks: string[] = [];
  let violations = 0;
  let whole: Record<string, { cpu: Record<string, number>; sold: number }> = {};
  let failed = true;
  try {
    for (const [name, dir] of Object.entries(dirs)) {
      progress(`starting ${name} (${dir}, --shape ${shape})`);
      sides.push(await startSide(name, dir, shape, work, run, values['cpu-prof']));
    }
    const everything: Tiers = {};
    for (const s of sides)
      for (const [t, pid] of Object.entries(s.tiers)) everything[`${s.name} ${t}`] = pid;
    const loadgen: Tiers = { loadgen: process.pid, ...everything };
    await quiet('every side after start-up', everything);
    const runStart = cpuSeconds(everything);
    const excluded: Record<string, number> = {};
    const soldBefore = new Map<string, number>(sides.map((s) => [s.name, 0]));
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 === 1 ? sides : [...sides].reverse();
      for (const side of order) {
        await quiet(`before ${side.name}'s round ${round}`, everything);
        progress(
          `round ${round}/${rounds}, ${side.name}: ${connections} connections for ${duration} s`,
        );
        const before = cpuSeconds(side.tiers);
        const genBefore = cpuSeconds(loadgen).loadgen!;
        const l = await load(
          driver,
          side.base,
          '/seckill',
          side.productId,
          `${side.name.replace(/[^A-Za-z0-9]+/g, '-')}-r${round}-${run}`,
          {
            duration,
            connections,
          },
        );
        const window = cpuSeconds(side.tiers);
        const genCpu = cpuSeconds(loadgen).loadgen! - genBefore;
        await until(
          `${side.name}'s orders of round ${round} as rows`,
          async () => (await unpersisted(side.probe)) === 0,
          300_000,
        );
        const drained = await quiet(`${side.name}'s drain, round ${round}`, side.tiers);
        const idle = cpuSeconds(side.tiers);
        const idleAll = cpuSeconds(everything);
        // the reconciliation, once the round's CPU is read: units sold, rows, nothing lost (its
        // CPU is left out of the whole run's too)
        const r = await persistedAndReconciled(side.base, side.productId);
        const checked = cpuSeconds(everything);
        for (const t of Object.keys(checked)) {
          const spent = checked[t]! - (idleAll[t] ?? checked[t]!);
          excluded[t] = (excluded[t] ?? 0) + spent;
        }
        const soldNow = r.total - r.remaining;
        const sold = soldNow - soldBefore.get(side.name)!;
        soldBefore.set(side.name, soldNow);
        const accepted = l.status['202'] ?? 0;
        const others = l.requests - accepted;
        if (others > 0 || l.errors > 0 || !r.ok || r.persisted !== soldNow) {
          violations++;
          checks.push(
            `${side.name} round ${round}: VIOLATED: ${others} answers not 202, ${l.errors} errors, ` +
              `sold ${soldNow}, rows ${r.persisted}, reconciliation ${r.ok ? 'clean' : r.problems.join('; ')}`,
          );
        }
        const windowUs = perSale(before, window, sold);
        const toIdleUs = perSale(before, idle, sold);
        windowUs.loadgen = toIdleUs.loadgen = Math.round((genCpu * 1e6) / Math.max(1, sold));
        const got = {
          soldPerS: Math.round(accepted / l.seconds),
          sold,
          windowUs,
          toIdleUs,
          drainMs: drained.waitedMs,
        };
        rows.set(side.name, [...(rows.get(side.name) ?? []), got]);
        progress(
          `  ${got.soldPerS} sold/s; us a sale to idle: ${JSON.stringify(toIdleUs)}; drained in ${got.drainMs} ms`,
        );
      }
    }
    const runEnd = cpuSeconds(everything);
    whole = Object.fromEntries(
      sides.map((s) => [
        s.name,
        {
          sold: soldBefore.get(s.name)!,
          cpu: Object.fromEntries(
            Object.keys(s.tiers).map((t) => [
              t,
              runEnd[`${s.name} ${t}`]! -
                runStart[`${s.name} ${t}`]! -
                (excluded[`${s.name} ${t}`] ?? 0),
            ]),
          ),
        },
      ]),
    );
    for (const s of sides) {
      const r = await persistedAndReconciled(s.base, s.productId);
      const good = r.ok && r.persisted === r.total - r.remaining;
      checks.push(
        `${s.name} (${s.commit}): ${good ? 'OK' : 'VIOLATED'}: sold ${r.total - r.remaining}, order rows ${r.persistedOrders}, ` +
          `reconciliation ${r.ok ? 'clean' : r.problems.join('; ')}`,
      );
      if (!good) violations++;
    }
    failed = false;
  } finally {
    for (const s of sides) s.probe.disconnect();
    await stopAll(sides.flatMap((s) => s.procs));
    for (const s of sides) await s.stack.stop();
    if (failed) progress(`logs kept in ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }

  const tiersShown = shape === 'up' ? (['API', 'Redis', 'PG'] as const) : TIERS;
  const summary = sides.map((s) => {
    const rs = rows.get(s.name)!;
    const med = (pick: (r: Round) => number) => Math.round(median(rs.map(pick)));
    const row: Record<string, string | number> = {
      side: `${s.name} (${s.commit})`,
      'sold/s': med((r) => r.soldPerS),
    };
    for (const t of tiersShown) row[`${t} us/sale`] = med((r) => r.toIdleUs[t] ?? 0);
    row['loadgen us/sale'] = med((r) => r.toIdleUs.loadgen ?? 0);
    row['sum us/sale'] = med((r) => tiersShown.reduce((a, t) => a + (r.toIdleUs[t] ?? 0), 0));
    row['window sum us/sale'] = med((r) =>
      tiersShown.reduce((a, t) => a + (r.windowUs[t] ?? 0), 0),
    );
    const w = whole[s.name]!;
    row['whole run us/sale'] = Math.round(
      (tiersShown.reduce((a, t) => a + (w.cpu[t] ?? 0), 0) * 1e6) / Math.max(1, w.sold),
    );
    row['drain ms'] = med((r) => r.drainMs);
    return row;
  });
  const mine = rows.get('this')!;
  /** this / a baseline: the median of the rounds' ratios (round i of each) */
  const ratiosTo = (name: string) => {
    const theirs = rows.get(name)!;
    const pairRatios = (pick: (r: Round) => number) =>
      ratio(median(mine.map((r, i) => (pick(r) / Math.max(1, pick(theirs[i]!))) * 100)), 100);
    return {
      soldPerS: pairRatios((r) => r.soldPerS),
      cpuPerSale: pairRatios((r) => tiersShown.reduce((a, t) => a + (r.toIdleUs[t] ?? 0), 0)),
      ...Object.fromEntries(
        tiersShown.map((t) => [`${t}PerSale`, pairRatios((r) => r.toIdleUs[t] ?? 0)]),
      ),
    };
  };
  const baselines = sides.filter((s) => s.name !== 'this');
  const byBaseline = Object.fromEntries(baselines.map((b) => [b.name, ratiosTo(b.name)]));
  const ratios = byBaseline.baseline!;
  const m = machine();
  const figures = {
    bench: 'versus',
    shape,
    sides: sides.map((s) => ({ name: s.name, commit: s.commit, dir: s.dir })),
    loadDriver: driver,
    machine: m,
    durationS: duration,
    rounds,
    connections,
    rounds_: Object.fromEntries([...rows].map(([k, v]) => [k, v])),
    summary,
    ratios,
    ratiosByBaseline: byBaseline,
    whole,
    checks,
    violations,
  };
  const text = [
    `\nbench:versus: this checkout (${sides[0]?.commit}) beside ` +
      baselines.map((b) => `${b.name} ${b.commit} (${b.dir})`).join(', ') +
      `, --shape ${shape}, lockfree N=${SEGMENTS}, no key, no limit, no endpoint, no CORS, no room`,
    `wrk, ${connections} connections, ${rounds} interleaved rounds of ${duration} s per side; ` +
      `each side on a redis-server and a PostgreSQL of its own`,
    `Machine: ${m.cpus} x ${m.model}, load average ${m.load1} at the end\n`,
    'medians of the rounds; CPU per unit sold over the window and the drain until the side was idle:',
    table(summary),
    '',
    "this / each baseline, the median of the rounds' ratios (round i of each side):",
    table(
      Object.keys(ratios).map((name) => ({
        ratio: name,
        ...Object.fromEntries(
          baselines.map((b) => [
            `/ ${b.name} (${b.commit})`,
            byBaseline[b.name]![name as keyof typeof ratios],
          ]),
        ),
      })),
    ),
    '',
    'invariants:',
    ...checks.map((c) => `  ${c}`),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) saveRun('versus', text, values['update-report']);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  if (violations > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
