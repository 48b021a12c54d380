/**
 * `npm run bench:k6`: the committed k6 results (load-tests/results/k6/), made by a real k6 against
 * servers this run starts: one API and one worker on a redis-server, the held-lock baseline's
 * server beside them (same key prefix, for the restocker), and one API and worker on a local
 * 3-master Redis Cluster, all on one PostgreSQL.
 *   - compare: load-tests/compare.js, every family (path, held, hotkey) at one open arrival rate
 *     above what this machine serves: --rate, or 1.5x the lock-free sales a second a short wrk
 *     probe measures first (so no variant is capped by the arrivals);
 *   - flash-sale-global / -segmented / -lockfree: load-tests/flash-sale.js, 500 units, 2 000
 *     arrivals a second for 20 s (demand far over the stock; every threshold applies).
 * Each run's stdout.txt (the command and k6's own summary) and k6's summary JSON land in
 * load-tests/results/raw/<run>/k6/<name>/ (--update-report: load-tests/results/k6/<name>/).
 *
 * Options: --duration 10 --rounds 2 (s per compare variant, interleaved rounds) --rate <arrivals/s> --only compare,flash-sale
 *          --no-build --update-report
 */
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { NO_RATE_LIMITS } from '../../src/config/index.js';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN } from './admin.js';
import { load, pickDriver } from './http-load.js';
import { heldServer } from './http-servers.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, progress, table } from './report.js';
import { benchCluster, benchStack } from './stack.js';
import { updateWhySegments } from './why-segments.js';

interface K6Run {
  name: string;
  script: string;
  env: Record<string, string>;
  /** the summary JSON the script writes into RESULTS_DIR */
  json: string;
}

function k6(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'k6',
      args,
      {
        cwd: ROOT,
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, K6_NO_USAGE_REPORT: 'true' },
      },
      (err, stdout, stderr) => {
        const code = err ? Number((err as { code?: number }).code ?? 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function api(env: NodeJS.ProcessEnv, label: string, procs: ChildProcess[]) {
  const port = await freePort();
  const e = { ...env, PORT: String(port) };
  procs.push(
    child(cli('serve'), e, `API (${label})`),
    child(cli('worker'), e, `worker (${label})`),
  );
  const base = `http://127.0.0.1:${port}`;
  await until(`the API (${label})`, async () => (await fetch(`${base}/readyz`)).ok, 60_000);
  return base;
}

/** Lock-free N=16 sales a second on `base` for a few seconds: what this machine serves. */
async function capacity(base: string, run: string): Promise<number> {
  const productId = `k6-probe-${run}`;
  const seeded = await admin(base, 'PUT', `/admin/products/${productId}`, {
    total: 10_000_000,
    strategy: 'lockfree',
    segments: 16,
  });
  if (!seeded.ok) throw new Error(`seeding the probe: ${seeded.status}`);
  const l = await load(pickDriver(), base, '/seckill', productId, `${productId}-u`, {
    duration: 4,
    connections: 100,
  });
  return Math.round((l.status['202'] ?? 0) / l.seconds);
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '2' },
      rate: { type: 'string' },
      only: { type: 'string', default: 'compare,flash-sale' },
      'no-build': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const only = values.only.split(',').map((x) => x.trim());
  execFileSync('k6', ['version'], { stdio: 'ignore' });
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const run = Date.now().toString(36);
  const out = values['update-report']
    ? join(ROOT, 'load-tests', 'results', 'k6')
    : join(ROOT, 'load-tests', 'results', 'raw', run, 'k6');
  const stack = await benchStack({});
  const cluster = only.includes('compare') ? await benchCluster({ shards: 3, replicas: 0 }) : null;
  const procs: ChildProcess[] = [];
  const results: Array<Record<string, string | number>> = [];
  let failed = 0;
  let rate = 0;
  let ratios = '';
  try {
    const common: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      WORKER_PORT: '0',
      DATABASE_URL: stack.databaseUrl,
      AUTH_MODE: 'dev',
      // k6 is one client address sending a crowd: the rate limits are not what is measured
      ...NO_RATE_LIMITS,
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
    };
    const single = {
      ...common,
      REDIS_URL: stack.redisUrl,
      KEY_PREFIX: `k6${run}`.slice(0, 16),
      QUEUE_PREFIX: `{k6${run}}`,
    };
    const base = await api(single, 'one Redis', procs);
    const held = only.includes('compare')
      ? await heldServer(single, stack.redisUrl, 'held-lock server')
      : null;
    if (held) procs.push(held.proc);
    const clusterBase = cluster
      ? await api(
          {
            ...common,
            REDIS_CLUSTER_NODES: cluster.cluster.masters
              .map((m) => `${m.host}:${m.port}`)
              .join(','),
            KEY_PREFIX: `k6c${run}`.slice(0, 16),
            QUEUE_PREFIX: `{k6c${run}}`,
          },
          'cluster',
          procs,
        )
      : null;
    const duration = `${values.duration}s`;
    const runs: K6Run[] = [];
    if (only.includes('compare')) {
      const served = await capacity(base, run);
      rate = values.rate ? Number(values.rate) : Math.ceil((served * 1.5) / 100) * 100;
      progress(`compare: lock-free served ${served}/s in the probe; arrivals at ${rate}/s`);
      runs.push({
        name: 'compare',
        script: 'compare.js',
        json: 'compare.json',
        env: {
          HELD_URL: held!.base,
          CLUSTER_URL: clusterBase!,
          RATE: String(rate),
          DURATION: duration,
          ROUNDS: values.rounds,
          GAP_S: '3',
          // overload by construction: purchases queue behind the arrivals, so these bound only a stall
          P95_MS: '5000',
          P99_MS: '10000',
        },
      });
    }
    if (only.includes('flash-sale')) {
      for (const [strategy, segments] of [
        ['global', 1],
        ['segmented', 16],
        ['lockfree', 16],
      ] as const) {
        runs.push({
          name: `flash-sale-${strategy}`,
          script: 'flash-sale.js',
          json: 'flash-sale.json',
          env: {
            STRATEGY: strategy,
            SEGMENTS: String(segments),
            STOCK: '500',
            RATE: '2000',
            DURATION: '20s',
          },
        });
      }
    }
    for (const r of runs) {
      const dir = join(out, r.name);
      mkdirSync(dir, { recursive: true });
      const env = { BASE_URL: base, ADMIN_TOKEN, RESULTS_DIR: dir, ...r.env };
      const args = ['run', '--no-color', '--quiet'];
      for (const [k, v] of Object.entries(env)) args.push('-e', `${k}=${v}`);
      args.push(`load-tests/${r.script}`);
      progress(`k6 ${r.name}`);
      const started = new Date().toISOString().slice(0, 16).replace('T', ' ');
      const res = await k6(args);
      const m = machine();
      const shown = Object.entries(r.env)
        .filter(([k]) => !k.endsWith('_URL'))
        .map(([k, v]) => `-e ${k}=${v}`)
        .join(' ');
      writeFileSync(
        join(dir, 'stdout.txt'),
        [
          `k6 (${execFileSync('k6', ['version']).toString().trim()}) run by \`npm run bench:k6\` at ${started} UTC on ${m.cpus} cores (${m.model}), ` +
            `load average ${m.load1} when it ended; everything (API, worker, redis-server, PostgreSQL, k6) on these cores`,
          `k6 run ${shown} load-tests/${r.script}   (exit ${res.code})`,
          '',
          res.stdout.trim(),
          '',
        ].join('\n'),
      );
      if (res.code !== 0) {
        failed++;
        process.stderr.write(res.stderr.split('\n').slice(-30).join('\n'));
      }
      const summary = JSON.parse(readFileSync(join(dir, r.json), 'utf8')) as {
        metrics: Record<string, { values: Record<string, number> }>;
      };
      const count = (k: string) => summary.metrics[k]?.values.count ?? 0;
      results.push({
        run: r.name,
        exit: res.code,
        accepted: count('seckill_accepted'),
        'sold out': count('seckill_sold_out'),
        rejected: count('seckill_rejected'),
        errors: count('seckill_errors'),
        violations: count('seckill_invariant_violations'),
        'p99 ms': Math.round(
          summary.metrics['http_req_duration{name:seckill}']?.values['p(99)'] ?? 0,
        ),
      });
      ratios ||= /^ratios: (.*)$/m.exec(res.stdout)?.[1] ?? '';
    }
  } finally {
    await stopAll(procs);
    await cluster?.stop();
    await stack.stop();
  }
  const text = [
    `\nk6 runs (${values['update-report'] ? 'load-tests/results/k6' : out}):`,
    table(results),
    rate ? `\ncompare: open arrivals at ${rate}/s; ${ratios}` : '',
    '',
  ].join('\n');
  process.stdout.write(text);
  if (values['update-report'] && rate) {
    const m = machine();
    await updateWhySegments({
      k6: {
        date: new Date().toISOString().slice(0, 10),
        load1: m.load1,
        rate,
        ratios: Object.fromEntries(
          [...ratios.matchAll(/(\w+) ([\d.]+)/g)].map((r) => [r[1]!, Number(r[2])]),
        ),
      },
    });
  }
  process.stdout.write(
    `${JSON.stringify({ bench: 'k6', machine: machine(), rate, ratios, results })}\n`,
  );
  if (failed) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
