/**
 * `npm run bench:failover`: what durable mode (REDIS_WAIT_REPLICAS=1) costs and what it saves,
 * in ONE run on a 3-master Redis Cluster with one replica each (formed by the launcher's code):
 *   - cost: lockfree N=16 with and without WAIT, interleaved rounds: accepted sales per second,
 *     latency, CPU per sale of the API and of Redis;
 *   - loss: a sale under load in each mode, a master killed (-9) in the middle and its replica
 *     taking over; afterwards, reconciliation counts the acknowledged sales the failover lost
 *     (orders persisted whose segment no longer has them) and the 503s answered meanwhile; the
 *     launcher restarts the killed node (it rejoins as a replica): how long until it is back,
 *     and until every order of the sale is persisted once the load ends.
 *
 * Options: --duration 5 --rounds 2 --connections 64 --no-build --no-write --update-report
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { freePort } from '../../src/launcher/process.js';
import type { ClusterNode } from '../../src/launcher/redis-cluster.js';
import { Keys } from '../../src/redis/keys.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { cpuSeconds } from './cpu.js';
import { load, pickDriver } from './http-load.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchCluster, benchStack } from './stack.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const STOCK = 10_000_000;

async function redisCpu(nodes: Redis[]): Promise<number> {
  let total = 0;
  for (const n of nodes) {
    const info = await n.info('cpu').catch(() => '');
    const f = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
    total += f('used_cpu_user') + f('used_cpu_sys');
  }
  return total;
}

/** The master that serves `key` now, asked of any live node. */
async function ownerOf(nodes: ClusterNode[], key: string): Promise<number> {
  const slot = calculateSlot(key);
  for (const n of nodes) {
    const r = new Redis(n.port, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await r.connect();
      const slots = (await r.cluster('SLOTS')) as unknown as Array<
        [number, number, [string, number]]
      >;
      const range = slots.find(([a, b]) => slot >= a && slot <= b);
      if (range) return range[2][1];
    } catch {
      // that node is down: ask the next
    } finally {
      r.disconnect();
    }
  }
  throw new Error(`no live node knows slot ${slot}`);
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
  progress('forming a Redis Cluster: 3 masters, 1 replica each');
  const { cluster, stop: stopCluster } = await benchCluster({
    shards: 3,
    replicas: 1,
    supervise: true,
  });
  const nodeClients = cluster.nodes.map((n) => new Redis(n.port, { lazyConnect: true }));
  for (const c of nodeClients) c.on('error', () => {});
  const driver = pickDriver();
  const run = Date.now().toString(36);
  const procs: ChildProcess[] = [];
  const costRows: Array<Record<string, string | number>> = [];
  const lossRows: Array<Record<string, string | number>> = [];
  try {
    const modes = await Promise.all(
      [0, 1].map(async (wait) => {
        const port = await freePort();
        const prefix = `fo${wait}${run}`.slice(0, 16);
        const env: NodeJS.ProcessEnv = {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          WORKER_PORT: '0',
          REDIS_CLUSTER_NODES: cluster.masters.map((m) => `${m.host}:${m.port}`).join(','),
          REDIS_WAIT_REPLICAS: String(wait),
          DATABASE_URL: stack.databaseUrl,
          KEY_PREFIX: prefix,
          QUEUE_PREFIX: `{fo${wait}${run}}`,
          AUTH_MODE: 'dev',
          ...NO_RATE_LIMITS,
          ADMIN_TOKEN,
          LOG_LEVEL: 'error',
          PORT: String(port),
        };
        const api = child(cli('serve'), env, `API (WAIT ${wait})`);
        const worker = child(cli('worker'), env, `worker (WAIT ${wait})`);
        procs.push(api, worker);
        const base = `http://127.0.0.1:${port}`;
        await until(
          `the API (WAIT ${wait})`,
          async () => (await fetch(`${base}/readyz`)).ok,
          60_000,
        );
        return {
          wait,
          base,
          prefix,
          queue: `{fo${wait}${run}}`,
          api: api.pid!,
          worker: worker.pid!,
        };
      }),
    );
    const seed = async (m: (typeof modes)[number], productId: string) => {
      const res = await admin(m.base, 'PUT', `/admin/products/${productId}`, {
        total: STOCK,
        segments: 16,
        strategy: 'lockfree',
      });
      if (!res.ok) throw new Error(`seeding: ${res.status} ${await res.text()}`);
    };
    // cost
    const totals = new Map<
      number,
      {
        requests: number;
        accepted: number;
        seconds: number;
        p99: number[];
        api: number;
        redis: number;
      }
    >();
    for (const m of modes) await seed(m, `cost-${m.wait}-${run}`);
    for (let round = 1; round <= rounds; round++) {
      for (const m of modes) {
        progress(`cost, round ${round}/${rounds}: REDIS_WAIT_REPLICAS=${m.wait}`);
        await Promise.all(nodeClients.map((c) => (c.status === 'wait' ? c.connect() : undefined)));
        const productId = `cost-${m.wait}-${run}`;
        const [cpu0, r0] = [cpuSeconds({ API: m.api }), await redisCpu(nodeClients)];
        const l = await load(driver, m.base, '/seckill', productId, `${productId}-r${round}`, {
          duration,
          connections,
        });
        const [cpu1, r1] = [cpuSeconds({ API: m.api }), await redisCpu(nodeClients)];
        const t = totals.get(m.wait) ?? {
          requests: 0,
          accepted: 0,
          seconds: 0,
          p99: [],
          api: 0,
          redis: 0,
        };
        t.requests += l.requests;
        t.accepted += l.status['202'] ?? 0;
        t.seconds += l.seconds;
        t.p99.push(l.percentiles?.p99 ?? 0);
        t.api += (cpu1.API ?? 0) - (cpu0.API ?? 0);
        t.redis += r1 - r0;
        totals.set(m.wait, t);
        await persistedAndReconciled(m.base, productId);
      }
    }
    for (const m of modes) {
      const t = totals.get(m.wait)!;
      const us = (s: number) => Math.round((s * 1e6) / Math.max(1, t.accepted));
      costRows.push({
        mode: m.wait ? 'durable (WAIT 1)' : 'default',
        'accepted/s': Math.round(t.accepted / t.seconds),
        'p99 ms': Math.max(...t.p99),
        'API us/sale': us(t.api),
        'Redis us/sale (all nodes)': us(t.redis),
      });
    }
    // loss
    for (const m of modes) {
      // a product some master of which holds segments but not its meta, queue or product list
      let productId = '';
      let victimPort = 0;
      const keys = new Keys(m.prefix);
      for (let k = 0; !victimPort; k++) {
        productId = `loss-${m.wait}-${k}-${run}`;
        const off = await Promise.all(
          [keys.product(productId).meta, m.queue, keys.products()].map((key) =>
            ownerOf(cluster.nodes, key),
          ),
        );
        for (let s = 0; s < 16 && !victimPort; s++) {
          const owner = await ownerOf(cluster.nodes, keys.segment(productId, s).state);
          if (!off.includes(owner)) victimPort = owner;
        }
      }
      await seed(m, productId);
      const victim = cluster.nodes.find((n) => n.port === victimPort)!;
      progress(`loss: REDIS_WAIT_REPLICAS=${m.wait}, killing the master on ${victimPort} mid-sale`);
      let killedAt = 0;
      const killAt = setTimeout(
        () => {
          killedAt = Date.now();
          victim.process.kill();
        },
        (duration * 1000) / 3,
      );
      killAt.unref();
      const l = await load(driver, m.base, '/seckill', productId, `${productId}-l`, {
        duration: duration * 2,
        connections,
      });
      clearTimeout(killAt);
      // the launcher restarts it: back as a replica of the master that took over
      const node = nodeClients[cluster.nodes.indexOf(victim)]!;
      await until(
        `the node on ${victimPort} back as a replica`,
        async () => ((await node.call('ROLE').catch(() => [''])) as string[])[0] === 'slave',
        120_000,
      );
      const backS = (Date.now() - killedAt) / 1000;
      const loadEnded = Date.now();
      const r = await persistedAndReconciled(m.base, productId);
      const persistedS = (Date.now() - loadEnded) / 1000;
      const lost =
        (
          (await (
            await admin(m.base, 'POST', `/admin/products/${productId}/reconcile`)
          ).json()) as { lostWrites?: unknown[] }
        ).lostWrites?.length ?? 0;
      lossRows.push({
        mode: m.wait ? 'durable (WAIT 1)' : 'default',
        requests: l.requests,
        accepted: l.status['202'] ?? 0,
        '503s': l.status['503'] ?? 0,
        'other 5xx': Object.entries(l.status)
          .filter(([c]) => c.startsWith('5') && c !== '503')
          .reduce((a, [, n]) => a + n, 0),
        'acknowledged, then lost': lost,
        'reconciliation problems': r.problems.length,
        'node back as replica, s after kill': Math.round(backS * 10) / 10,
        'all persisted, s after load': Math.round(persistedS * 10) / 10,
      });
    }
  } finally {
    for (const c of nodeClients) c.disconnect();
    await stopAll(procs);
    await stopCluster();
    await stack.stop();
  }
  const ratios = {
    durableVsDefaultAcceptedPerS: ratio(
      Number(costRows[1]?.['accepted/s']),
      Number(costRows[0]?.['accepted/s']),
    ),
  };
  const figures = {
    bench: 'failover',
    loadDriver: driver,
    machine: machine(),
    durationS: duration,
    rounds,
    connections,
    cost: costRows,
    loss: lossRows,
    ratios,
  };
  const text = [
    `\nFailover benchmark: ${driver}, ${connections} connections; 3 masters + 1 replica each, all on ${machine().cpus} cores\n`,
    'cost of durable mode (lockfree N=16, interleaved rounds):',
    table(costRows),
    '',
    table(Object.entries(ratios).map(([name, value]) => ({ ratio: name, value }))),
    '',
    `a master killed -9 a third into a ${duration * 2} s sale, its replica taking over:`,
    table(lossRows),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) saveRun('failover', text, values['update-report']);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
