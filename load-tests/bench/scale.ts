/**
 * `npm run bench:scale`: one sale's throughput and per-tier cost on four topologies, in ONE run:
 * one Redis or a 3-master Redis Cluster (formed by the launcher's code), each with 1 or 2 API
 * processes (API_PROCESSES), for lockfree and segmented N=16. Every topology has its own API and
 * worker processes and key prefix; scenarios run in interleaved rounds. Per scenario: requests
 * and accepted sales per second, latency, and CPU microseconds per accepted sale of each tier
 * (API processes from /proc, each Redis shard from INFO cpu, worker, PostgreSQL, load generator),
 * checked afterwards (reconciliation clean, every sale persisted).
 *
 * Then a capacity model: from the per-sale cost of each tier, how many instances (one core each,
 * kept at 70 % busy) each tier needs for 100 000 and 1 000 000 purchases per second. Everything
 * here shares 2 cores: the ratios between topologies show contention on those cores, not the
 * gain more machines would give; the per-sale cost is what carries over.
 *
 * Options: --duration 5 (s per scenario per round) --rounds 2 --connections 64 --no-build
 *          --no-write --update-report (writes load-tests/results/scale.md)
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { cpuSeconds, type Tiers } from './cpu.js';
import { load, pickDriver } from './http-load.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchCluster, benchStack } from './stack.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const STOCK = 10_000_000;
/** Instances run at most this busy in the model (headroom for bursts and failover). */
const UTILISATION = 0.7;
const TARGETS_PER_S = [100_000, 1_000_000];

interface Topology {
  name: string;
  cluster: boolean;
  processes: number;
}

const TOPOLOGIES: Topology[] = [
  { name: '1 Redis, 1 API', cluster: false, processes: 1 },
  { name: '1 Redis, 2 API', cluster: false, processes: 2 },
  { name: '3 shards, 1 API', cluster: true, processes: 1 },
  { name: '3 shards, 2 API', cluster: true, processes: 2 },
];
const STRATEGIES = ['lockfree', 'segmented'] as const;

/** CPU seconds each Redis node reports (INFO cpu: user + sys, all its threads). */
async function redisCpu(nodes: Redis[]): Promise<number[]> {
  return Promise.all(
    nodes.map(async (n) => {
      const info = await n.info('cpu');
      const f = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
      return f('used_cpu_user') + f('used_cpu_sys');
    }),
  );
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '64' },
      'no-build': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const duration = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({});
  progress('forming a 3-master Redis Cluster');
  const { cluster, stop: stopCluster } = await benchCluster({ shards: 3, replicas: 0 });
  const single = new Redis(stack.redisUrl);
  const shards = cluster.masters.map((m) => new Redis(m.port, m.host));
  const driver = pickDriver();
  const run = Date.now().toString(36);
  const procs: ChildProcess[] = [];
  const rows: Array<Record<string, string | number>> = [];
  const checks: string[] = [];
  let violations = 0;
  /** per topology and strategy: totals over the rounds */
  const totals = new Map<
    string,
    {
      requests: number;
      accepted: number;
      seconds: number;
      p99: number[];
      cpu: Record<string, number>;
      redis: number[];
    }
  >();
  try {
    const tops = await Promise.all(
      TOPOLOGIES.map(async (t, i) => {
        const port = await freePort();
        const env: NodeJS.ProcessEnv = {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          WORKER_PORT: '0',
          ...(t.cluster
            ? { REDIS_CLUSTER_NODES: cluster.masters.map((m) => `${m.host}:${m.port}`).join(',') }
            : { REDIS_URL: stack.redisUrl }),
          DATABASE_URL: stack.databaseUrl,
          KEY_PREFIX: `sc${i}${run}`.slice(0, 16),
          QUEUE_PREFIX: `{sc${i}${run}}`,
          AUTH_MODE: 'dev',
          ...NO_RATE_LIMITS,
          ADMIN_TOKEN,
          LOG_LEVEL: 'warn',
          PORT: String(port),
          API_PROCESSES: String(t.processes),
        };
        const api = child(cli('serve'), env, `API (${t.name})`);
        const worker = child(cli('worker'), env, `worker (${t.name})`);
        procs.push(api, worker);
        const base = `http://127.0.0.1:${port}`;
        await until(`the API of ${t.name}`, async () => (await fetch(`${base}/readyz`)).ok, 60_000);
        for (const strategy of STRATEGIES) {
          const res = await admin(base, 'PUT', `/admin/products/${strategy}-${i}-${run}`, {
            total: STOCK,
            segments: 16,
            strategy,
          });
          if (!res.ok) throw new Error(`seeding on ${t.name}: ${res.status} ${await res.text()}`);
        }
        return { ...t, index: i, base, api: api.pid!, worker: worker.pid! };
      }),
    );
    for (let round = 1; round <= rounds; round++) {
      for (const t of tops) {
        for (const strategy of STRATEGIES) {
          const key = `${t.name}|${strategy}`;
          progress(`round ${round}/${rounds}: ${t.name}, ${strategy} N=16`);
          const tiers: Tiers = {
            API: t.api,
            worker: t.worker,
            PG: stack.postgresPid,
            loadgen: process.pid,
          };
          const nodes = t.cluster ? shards : [single];
          const [cpu0, redis0] = [cpuSeconds(tiers), await redisCpu(nodes)];
          // a product per topology: they share one PostgreSQL
          const productId = `${strategy}-${t.index}-${run}`;
          const l = await load(
            driver,
            t.base,
            '/seckill',
            productId,
            `${productId}-${t.api}-r${round}`,
            {
              duration,
              connections,
            },
          );
          const [cpu1, redis1] = [cpuSeconds(tiers), await redisCpu(nodes)];
          const tot = totals.get(key) ?? {
            requests: 0,
            accepted: 0,
            seconds: 0,
            p99: [],
            cpu: {},
            redis: nodes.map(() => 0),
          };
          tot.requests += l.requests;
          tot.accepted += l.status['202'] ?? 0;
          tot.seconds += l.seconds;
          tot.p99.push(l.percentiles?.p99 ?? 0);
          for (const [tier, s] of Object.entries(cpu1))
            tot.cpu[tier] = (tot.cpu[tier] ?? 0) + s - (cpu0[tier] ?? s);
          redis1.forEach((s, i) => (tot.redis[i]! += s - redis0[i]!));
          totals.set(key, tot);
          const r = await persistedAndReconciled(t.base, productId);
          if (!r.ok || r.persisted !== r.total - r.remaining) {
            violations++;
            checks.push(`${key}: VIOLATED: ${r.problems.slice(0, 3).join('; ')}`);
          }
        }
      }
    }
    for (const t of tops) {
      for (const strategy of STRATEGIES) {
        const tot = totals.get(`${t.name}|${strategy}`)!;
        const us = (s: number) => Math.round((s * 1e6) / Math.max(1, tot.accepted));
        rows.push({
          topology: t.name,
          strategy: `${strategy} N=16`,
          'req/s': Math.round(tot.requests / tot.seconds),
          'accepted/s': Math.round(tot.accepted / tot.seconds),
          'p99 ms': Math.max(...tot.p99),
          'API us/sale': us(tot.cpu.API ?? 0),
          'Redis us/sale (per shard)': tot.redis.map(us).join(' / '),
          'Redis us/sale': us(tot.redis.reduce((a, b) => a + b, 0)),
          'worker us/sale': us(tot.cpu.worker ?? 0),
          'PG us/sale': us(tot.cpu.PG ?? 0),
          'loadgen us/sale': us(tot.cpu.loadgen ?? 0),
        });
        checks.push(`${t.name}, ${strategy}: persisted and reconciled after each round`);
      }
    }
  } finally {
    single.disconnect();
    for (const s of shards) s.disconnect();
    await stopAll(procs);
    await stopCluster();
    await stack.stop();
  }

  const acc = (top: string, strategy: string) =>
    Number(
      rows.find((r) => r.topology === top && r.strategy === `${strategy} N=16`)?.['accepted/s'] ??
        0,
    );
  const ratios: Record<string, number> = {};
  for (const s of STRATEGIES) {
    ratios[`${s}: 3 shards vs 1 Redis (1 API)`] = ratio(
      acc('3 shards, 1 API', s),
      acc('1 Redis, 1 API', s),
    );
    ratios[`${s}: 2 API vs 1 API (1 Redis)`] = ratio(
      acc('1 Redis, 2 API', s),
      acc('1 Redis, 1 API', s),
    );
    ratios[`${s}: 2 API vs 1 API (3 shards)`] = ratio(
      acc('3 shards, 2 API', s),
      acc('3 shards, 1 API', s),
    );
  }

  // The model takes each tier's cost per sale on the cluster with one API process: every tier
  // there runs in its own processes, and its Redis cost is split over shards as a cluster splits it.
  const model: Array<Record<string, string | number>> = [];
  const modelFigures: Record<string, Record<string, Record<string, number>>> = {};
  for (const s of STRATEGIES) {
    const row = rows.find((r) => r.topology === '3 shards, 1 API' && r.strategy === `${s} N=16`)!;
    const perTier: Record<string, number> = {
      'API process': Number(row['API us/sale']),
      'Redis shard': Number(row['Redis us/sale']),
      'order worker': Number(row['worker us/sale']),
      'PostgreSQL (cores)': Number(row['PG us/sale']),
    };
    modelFigures[s] = {};
    for (const [tier, us] of Object.entries(perTier)) {
      const need = TARGETS_PER_S.map((x) => Math.ceil((x * us) / 1e6 / UTILISATION));
      modelFigures[s][tier] = {
        usPerSale: us,
        ...Object.fromEntries(TARGETS_PER_S.map((x, i) => [`${x}/s`, need[i]!])),
      };
      model.push({
        strategy: `${s} N=16`,
        tier,
        'us/sale': us,
        ...Object.fromEntries(
          TARGETS_PER_S.map((x, i) => [`for ${x.toLocaleString('en')}/s`, need[i]!]),
        ),
      });
    }
  }
  const figures = {
    bench: 'scale',
    loadDriver: driver,
    machine: machine(),
    durationS: duration,
    rounds,
    connections,
    results: rows,
    ratios,
    model: { utilisation: UTILISATION, perTier: modelFigures },
    checks,
    violations,
  };
  const text = [
    `\nScale benchmark: ${driver}, ${connections} connections, ${rounds} interleaved rounds of ${duration} s per scenario; every process shares the same ${machine().cpus} cores\n`,
    table(rows),
    '',
    table(Object.entries(ratios).map(([name, value]) => ({ ratio: name, value }))),
    '',
    `capacity model: instances (one core each, ${UTILISATION * 100} % busy) per tier for a sustained rate of accepted purchases`,
    table(model),
    '',
    'invariants:',
    ...checks.map((c) => `  ${c}`),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) saveRun('scale', text, values['update-report']);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  if (violations > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
