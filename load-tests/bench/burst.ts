/**
 * `npm run bench:burst`: how long `/healthz` waits while a sale's first burst of connections
 * arrives, in ONE run: `--connections` (2 000) shoppers open their connections at once, each
 * with a POST /seckill (lockfree N=16, stock enough for all), from a process of their own, while
 * this process asks /healthz every 100 ms on a fresh connection for 5 s (each probe given 10 s).
 * Scenarios: one API process; two with Node's round-robin (the primary accepts and hands every
 * connection over); two that accept their own connections (what `serve` does now). Interleaved
 * rounds. Prints a table and ends with one JSON line.
 *
 * Options: --connections 2000 --rounds 2 --no-build --no-write --update-report
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN } from './admin.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, percentile, progress, saveRun, table } from './report.js';
import { benchStack } from './stack.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const PROBE_EVERY_MS = 100;
const PROBING_MS = 5_000;
const PROBE_TIMEOUT_MS = 10_000;

interface Scenario {
  name: string;
  processes: number;
  /** NODE_CLUSTER_SCHED_POLICY for the API processes (undefined: the product's choice) */
  sched?: 'rr';
}

const SCENARIOS: Scenario[] = [
  { name: '1 API process', processes: 1 },
  { name: '2 API processes, round-robin', processes: 2, sched: 'rr' },
  { name: '2 API processes, each accepts', processes: 2 },
];

/** ms until the status line of GET /healthz on a fresh connection; undefined: no answer. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const started = performance.now();
    const s = connect(port, '127.0.0.1');
    s.setTimeout(PROBE_TIMEOUT_MS, () => {
      s.destroy();
      resolve(undefined);
    });
    s.on('connect', () => s.write('GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'));
    s.on('data', (d) => {
      s.destroy();
      resolve(String(d).startsWith('HTTP/1.1 200') ? performance.now() - started : undefined);
    });
    s.on('error', () => resolve(undefined));
  });
}

function burst(port: number, productId: string, n: number, label: string) {
  const c = spawn(
    process.execPath,
    [
      join(ROOT, 'load-tests', 'bench', 'burst-client.mjs'),
      String(port),
      productId,
      String(n),
      label,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  c.stdout.on('data', (d) => (out += d));
  return new Promise<{ answered: number; statuses: Record<string, number> }>((resolve, reject) =>
    c.once('exit', () => {
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`burst client: ${out}`));
      }
    }),
  );
}

async function main() {
  const { values } = parseArgs({
    options: {
      connections: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '2' },
      'no-build': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const connections = Number(values.connections);
  const rounds = Number(values.rounds);
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({});
  const run = Date.now().toString(36);
  const procs: ChildProcess[] = [];
  const samples = new Map<string, { ms: number[]; unanswered: number; burst: string[] }>();
  try {
    const apis = [];
    for (const [i, sc] of SCENARIOS.entries()) {
      const port = await freePort();
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        REDIS_URL: stack.redisUrl,
        DATABASE_URL: stack.databaseUrl,
        KEY_PREFIX: `bu${i}${run}`,
        QUEUE_PREFIX: `{bu${i}${run}}`,
        AUTH_MODE: 'dev',
        ...NO_RATE_LIMITS,
        ADMIN_TOKEN,
        LOG_LEVEL: 'error',
        PORT: String(port),
        API_PROCESSES: String(sc.processes),
        ...(sc.sched && { NODE_CLUSTER_SCHED_POLICY: sc.sched }),
      };
      procs.push(child(cli('serve'), env, `API (${sc.name})`));
      const base = `http://127.0.0.1:${port}`;
      await until(sc.name, async () => (await fetch(`${base}/readyz`)).ok, 60_000);
      apis.push({ sc, port, base });
      samples.set(sc.name, { ms: [], unanswered: 0, burst: [] });
    }
    for (let round = 0; round < rounds; round++) {
      for (const { sc, port, base } of apis) {
        const productId = `burst-${round}-${run}`;
        const seeded = await admin(base, 'PUT', `/admin/products/${productId}`, {
          total: 10 * connections,
          segments: 16,
          strategy: 'lockfree',
        });
        if (!seeded.ok) throw new Error(`seeding: ${seeded.status} ${await seeded.text()}`);
        progress(`round ${round + 1}: ${sc.name}, ${connections} connections at once`);
        const shoppers = burst(port, productId, connections, `${productId}-${sc.processes}`);
        const probes: Array<Promise<number | undefined>> = [];
        for (let t = 0; t < PROBING_MS; t += PROBE_EVERY_MS) {
          probes.push(probe(port));
          await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
        }
        const s = samples.get(sc.name)!;
        for (const ms of await Promise.all(probes)) {
          if (ms === undefined) s.unanswered++;
          else s.ms.push(ms);
        }
        const b = await shoppers;
        s.burst.push(`${b.answered}/${connections} (${JSON.stringify(b.statuses)})`);
      }
    }
  } finally {
    await stopAll(procs);
    await stack.stop();
  }
  const rows = SCENARIOS.map((sc) => {
    const s = samples.get(sc.name)!;
    const ms = [...s.ms].sort((a, b) => a - b);
    return {
      scenario: sc.name,
      probes: ms.length + s.unanswered,
      [`unanswered in ${PROBE_TIMEOUT_MS / 1000} s`]: s.unanswered,
      'p50 ms': Math.round(percentile(ms, 50)),
      'p99 ms': Math.round(percentile(ms, 99)),
      'max ms': Math.round(ms.at(-1) ?? 0),
    };
  });
  const text = [
    `\nProbes during a burst: ${connections} connections at once (POST /seckill, lockfree N=16), /healthz every ${PROBE_EVERY_MS} ms for ${PROBING_MS / 1000} s, ${rounds} round(s), ${machine().cpus} cores\n`,
    table(rows),
    '',
    ...SCENARIOS.map(
      (sc) => `${sc.name}: shoppers answered ${samples.get(sc.name)!.burst.join(', ')}`,
    ),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) saveRun('burst', text, values['update-report']);
  process.stdout.write(
    `${JSON.stringify({ bench: 'burst', machine: machine(), connections, rounds, rows })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
