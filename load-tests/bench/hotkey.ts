/**
 * `npm run bench:hotkey`: the hot key across masters, in ONE run. A product with one segment
 * lives on one master; with 16 (spread tags) it covers every master. On a local 3-master Redis
 * Cluster, one API process and one worker sell a global product and a segmented N=16 one in
 * interleaved rounds; each master's CPU (INFO cpu) over each window, per accepted sale, gives
 * the busiest master's share (even is 1/3) and, from the busiest master's µs per sale, the
 * ceiling of one product's sales a second as masters grow (hotkey-model.ts). Then the Redis-bound
 * half (hotkey-direct.ts): the deduct script straight at one pinned redis-server, one segment vs
 * 16, so the per-master ceiling is measured. Prints tables and a chart, ends with one JSON line.
 *
 * Options: --duration 5 (s per scenario per round) --rounds 2 --connections 64
 *          --direct-seconds 4 --no-build --no-write --update-report (load-tests/results/hotkey.md)
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { createDb } from '../../src/db/index.js';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { load, pickDriver } from './http-load.js';
import { redisBound } from './hotkey-direct.js';
import { busiestShare, ceilings, ownerOf, segmentsPerMaster, splitCosts } from './hotkey-model.js';
import { writeHotkeyReport } from './hotkey-report.js';
import { updateWhySegments } from './why-segments.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, progress, table } from './report.js';
import { benchCluster, benchStack } from './stack.js';
import { spreadTag } from '../../src/redis/spread.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const STOCK = 10_000_000;
const MASTERS = 3;
const MASTER_COUNTS = [1, 3, 6, 12, 24];
const STRATEGIES = [
  { name: 'global', strategy: 'global', segments: 1 },
  { name: 'segmented N=16', strategy: 'segmented', segments: 16 },
] as const;

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
      'direct-seconds': { type: 'string', default: '4' },
      'no-build': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const [duration, rounds, connections] = [values.duration, values.rounds, values.connections].map(
    Number,
  ) as [number, number, number];
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({});
  progress(`forming a ${MASTERS}-master Redis Cluster`);
  const { cluster, stop: stopCluster } = await benchCluster({ shards: MASTERS, replicas: 0 });
  const masters = cluster.masters.map((m) => new Redis(m.port, m.host));
  const driver = pickDriver();
  const run = Date.now().toString(36);
  const procs: ChildProcess[] = [];
  const checks: string[] = [];
  let violations = 0;
  const totals = new Map<string, { accepted: number; seconds: number; cpu: number[] }>();
  const productOf = (name: string) => `hot-${name.replace(/[^A-Za-z0-9]+/g, '-')}-${run}`;
  // the order queue (BullMQ's keys, one hash tag) on a master that does not hold the global
  // product's segment, so the two costs are told apart
  const globalMaster = ownerOf(calculateSlot(spreadTag(productOf('global'), 0)), MASTERS);
  let queueTag = `hk${run}`;
  for (let k = 0; ownerOf(calculateSlot(queueTag), MASTERS) === globalMaster; k++)
    queueTag = `hk${run}q${k}`;
  const queuePrefix = `{${queueTag}}`;
  let direct: Awaited<ReturnType<typeof redisBound>>;
  let idlePerS: number[] = [];
  try {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      WORKER_PORT: '0',
      REDIS_CLUSTER_NODES: cluster.masters.map((m) => `${m.host}:${m.port}`).join(','),
      DATABASE_URL: stack.databaseUrl,
      KEY_PREFIX: `hk${run}`.slice(0, 16),
      QUEUE_PREFIX: queuePrefix,
      AUTH_MODE: 'dev',
      ...NO_RATE_LIMITS,
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      PORT: String(port),
    };
    const base = `http://127.0.0.1:${port}`;
    procs.push(child(cli('serve'), env, 'API'), child(cli('worker'), env, 'worker'));
    await until('the API', async () => (await fetch(`${base}/readyz`)).ok, 60_000);
    for (const s of STRATEGIES) {
      const res = await admin(base, 'PUT', `/admin/products/${productOf(s.name)}`, {
        total: STOCK,
        strategy: s.strategy,
        ...(s.segments > 1 && { segments: s.segments }),
      });
      if (!res.ok) throw new Error(`seeding ${s.name}: ${res.status} ${await res.text()}`);
    }
    // each master's background (cron, the cluster bus, the worker's idle polls) is not a sale's
    const idle0 = [await redisCpu(masters), performance.now()] as const;
    await new Promise((r) => setTimeout(r, 3_000));
    const idleS = (performance.now() - idle0[1]) / 1000;
    idlePerS = (await redisCpu(masters)).map((c, i) => (c - idle0[0][i]!) / idleS);
    for (let round = 1; round <= rounds; round++) {
      for (const s of STRATEGIES) {
        progress(`round ${round}/${rounds}: ${s.name} on ${MASTERS} masters`);
        const productId = productOf(s.name);
        const cpu0 = await redisCpu(masters);
        const l = await load(driver, base, '/seckill', productId, `${productId}-r${round}`, {
          duration,
          connections,
        });
        const cpu1 = await redisCpu(masters);
        const t = totals.get(s.name) ?? { accepted: 0, seconds: 0, cpu: masters.map(() => 0) };
        t.accepted += l.status['202'] ?? 0;
        t.seconds += l.seconds;
        cpu1.forEach((c, i) => (t.cpu[i]! += Math.max(0, c - cpu0[i]! - idlePerS[i]! * l.seconds)));
        totals.set(s.name, t);
        const bad = Object.entries(l.status).filter(([c]) => c !== '202' && c !== '503');
        const r = await persistedAndReconciled(base, productId);
        if (!r.ok || r.persisted !== r.total - r.remaining || bad.length || l.errors) {
          violations++;
          checks.push(
            `${s.name} round ${round}: VIOLATED: ${JSON.stringify(bad)} ${l.errors} errors ${r.problems.slice(0, 3).join('; ')}`,
          );
        }
      }
    }
    await stopAll(procs.splice(0));
    const db = createDb(stack.databaseUrl);
    try {
      direct = await redisBound({
        db,
        seconds: Number(values['direct-seconds']),
        rounds,
        segmentCounts: [1, 16],
      });
    } finally {
      await db.destroy();
    }
    for (const v of direct.violations) checks.push(`Redis-bound: VIOLATED: ${v}`);
    violations += direct.violations.length;
  } finally {
    for (const m of masters) m.disconnect();
    await stopAll(procs);
    await stopCluster();
    await stack.stop();
  }

  // which master holds what: the segments by their spread tags, the order queue by its prefix
  const queueMaster = ownerOf(calculateSlot(queueTag), MASTERS);
  const perMaster = STRATEGIES.map((s) => {
    const t = totals.get(s.name)!;
    const us = t.cpu.map((c) => Math.round((c * 1e6) / Math.max(1, t.accepted)));
    return { ...s, t, us, held: segmentsPerMaster(productOf(s.name), s.segments, MASTERS) };
  });
  const rows = perMaster.flatMap((p) =>
    p.us.map((us, i) => ({
      strategy: p.name,
      master: i,
      'segments here': p.held[i]!,
      'order queue here': i === queueMaster ? 'yes' : '',
      'Redis us/sale': us,
      share:
        Math.round(
          (us /
            Math.max(
              1,
              p.us.reduce((a, b) => a + b, 0),
            )) *
            100,
        ) / 100,
    })),
  );
  const [g, s16] = perMaster as [(typeof perMaster)[0], (typeof perMaster)[0]];
  const split = {
    global: splitCosts(g.us, g.held, 1, queueMaster),
    segmented: splitCosts(s16.us, s16.held, 16, queueMaster),
  };
  const served = { global: split.global.perServed, segmented: split.segmented.perServed };
  const queueUs = [split.global.queue, split.segmented.queue].filter(
    (q): q is number => q !== undefined,
  );
  const queuePerSale = queueUs.length
    ? Math.round((queueUs.reduce((a, b) => a + b, 0) / queueUs.length) * 10) / 10
    : null;
  // the same shares with the order queue's own cost taken off its master: the product's part
  const withoutQueue = (p: typeof g, q: number | undefined) =>
    busiestShare(p.us.map((u, i) => (i === queueMaster ? Math.max(0, u - (q ?? 0)) : u)));
  const fromHttp = ceilings(productOf(s16.name), 16, served, MASTER_COUNTS);
  const [d1, d16] = direct!.rows as [(typeof direct.rows)[0], (typeof direct.rows)[0]];
  const fromDirect = ceilings(
    productOf(s16.name),
    16,
    { global: d1['Redis us/deduct'], segmented: d16['Redis us/deduct'] },
    MASTER_COUNTS,
  );
  const ceilingRows = MASTER_COUNTS.map((m, i) => ({
    masters: m,
    'N=16 segments on the busiest': fromHttp[i]!.busiestSegments16,
    'global (HTTP run)': fromHttp[i]!.global,
    'segmented N=16 (HTTP run)': fromHttp[i]!.segmented16,
    'global (deduct alone)': fromDirect[i]!.global,
    'segmented N=16 (deduct alone)': fromDirect[i]!.segmented16,
  }));
  const hotKey = {
    masters: MASTERS,
    busiestMasterShare: { global: busiestShare(g.us), segmented16: busiestShare(s16.us) },
    busiestMasterShareWithoutQueue: {
      global: withoutQueue(g, split.global.queue),
      segmented16: withoutQueue(s16, split.segmented.queue),
    },
    usPerSalePerMaster: { global: g.us, segmented16: s16.us },
    acceptedPerS: Object.fromEntries(
      perMaster.map((p) => [p.name, Math.round(p.t.accepted / p.t.seconds)]),
    ),
    idleMsPerSPerMaster: idlePerS.map((x) => Math.round(x * 10_000) / 10),
    usPerServedSale: served,
    orderQueueUsPerSale: queuePerSale,
    ceilings: ceilingRows,
    redisBound: { pinned: direct!.pinned, rows: direct!.rows },
  };
  const figures = {
    bench: 'hotkey',
    loadDriver: driver,
    machine: machine(),
    durationS: duration,
    rounds,
    connections,
    hotKey,
    checks,
    violations,
  };
  const text = [
    `\nHot key across masters: ${driver}, ${connections} connections, ${rounds} interleaved rounds of ${duration} s, one API + one worker on a ${MASTERS}-master cluster\n`,
    table(rows),
    '',
    `each master's idle CPU (${idlePerS.map((x) => `${(x * 1000).toFixed(1)}`).join(' / ')} ms/s, measured before the rounds) taken out of its window`,
    `busiest master's share of Redis CPU (even: ${(1 / MASTERS).toFixed(2)}): global ${hotKey.busiestMasterShare.global}, segmented N=16 ${hotKey.busiestMasterShare.segmented16}`,
    `the same without the order queue's cost on its master (the product's own part): global ${hotKey.busiestMasterShareWithoutQueue.global}, segmented N=16 ${hotKey.busiestMasterShareWithoutQueue.segmented16}`,
    `accepted/s: ${Object.entries(hotKey.acceptedPerS)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    '',
    `Redis-bound: the deduct script alone at one redis-server (${direct!.pinned ? 'pinned to one core' : 'not pinned'}), 16 redis-benchmark drivers x 4 connections x 8 pipelined`,
    table(direct!.rows.map((r) => ({ ...r }))),
    ...direct!.rows.map((r) =>
      r['Redis core busy'] >= 0.9
        ? `  ${r.segments} segment(s): the pinned core was the limit: one master sells ${r['deducts/s']} deducts/s (1e6 / ${r['Redis us/deduct']} us = ${Math.round(1e6 / r['Redis us/deduct'])})`
        : `  ${r.segments} segment(s): the pinned core was ${r['Redis core busy']} busy (shared with other work): one master's ceiling is 1e6 / ${r['Redis us/deduct']} us = ${Math.round(1e6 / r['Redis us/deduct'])} deducts/s, from its CPU per deduct`,
    ),
    '',
    `one product's ceiling, sales/s, as masters grow: 1e6 / (u x k / 16), k = segments on the busiest master,`,
    `u = a master's us per sale it serves: HTTP run, from the masters without the order queue (their us/sale over`,
    `their share of the segments): global ${served.global.toFixed(1)}, segmented ${served.segmented.toFixed(1)} us; deduct alone: ${d1['Redis us/deduct']}, ${d16['Redis us/deduct']} us`,
    queuePerSale === null
      ? 'the order queue: its master also held the global segment, its cost not told apart'
      : `the order queue's master adds ${queuePerSale} us per sale of any product (one hash tag: one master however many): all products' sales together stop near 1e6 / ${queuePerSale} = ${Math.round(1e6 / queuePerSale)}/s`,
    table(ceilingRows),
    '',
    'invariants:',
    ...(checks.length
      ? checks.map((c) => `  ${c}`)
      : ['  every round persisted and reconciled, no error; the deduct counts match the stock']),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) {
    const dir = values['update-report']
      ? join(ROOT, 'load-tests', 'results')
      : join(ROOT, 'load-tests', 'results', 'raw', run);
    writeHotkeyReport(dir, figures, text);
    progress(`report written to ${dir}`);
    if (values['update-report']) {
      await updateWhySegments({
        hotkey: {
          date: new Date().toISOString().slice(0, 10),
          load1: figures.machine.load1,
          busiestMasterShare: hotKey.busiestMasterShare,
          busiestMasterShareWithoutQueue: hotKey.busiestMasterShareWithoutQueue,
          ceilings: fromHttp.map((c) => ({
            masters: c.masters,
            global: c.global,
            segmented16: c.segmented16,
          })),
          deductUs: { one: d1['Redis us/deduct'], sixteen: d16['Redis us/deduct'] },
        },
      });
    }
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  if (violations > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
