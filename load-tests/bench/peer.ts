/**
 * `npm run bench:peer`: this service beside a public NestJS + ioredis + BullMQ peer
 * (chanesteves/flash-sale-system, built outside this repository by load-tests/peer/setup.sh), in
 * ONE run on the same machine, servers and load generator (wrk, load-tests/bench/wrk.lua):
 *   - ours in stock: `seckill up` (API and order workers in one process, its defaults; the
 *     peer's API and BullMQ processor are one process too), lockfree N=16, stock that outlasts
 *     the run;
 *   - peer in stock: its POST /api/purchases with a stock that outlasts the run;
 *   - ours / peer sold out: after a real sellout of 1 000 units, refusals only;
 *   - then orders persisted end to end: a fresh sale of --sales units each, time from the first
 *     request until the last order row is in PostgreSQL.
 * Every request is a new shopper (the peer refuses a repeat buyer; neither side rate-limits
 * here: ours runs with its limits off, its defaults (5/s a shopper, 200/s an address) would
 * refuse wrk's one address; the peer's throttler is raised out of reach by setup.sh).
 * Rounds interleave the scenarios (which side goes first alternates), so a slow spell of this
 * shared machine hits both. After each sale round the run waits until every sale has its order
 * row, then checks exactness: ours through the reconciliation report, the peer from its Redis
 * keys and its orders table (accepted 201s == units sold but for those cut off in flight,
 * order rows == units sold, stock + sold == seeded, buyers == sold).
 * CPU: /proc utime+stime of each process over each window, per answer; for sales also over
 * the window plus the drain that persists its orders, per unit sold. Prints a table and the
 * ratios and ends with one JSON line; --update-report writes load-tests/results/peer.md.
 *
 * Options: --duration 10 (s per scenario per round) --rounds 6 --connections 100 --sales 20000
 *          --peer-dir <dir> (default ~/.cache/seckill/peer) --no-build --update-report --no-write
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { freePort } from '../../src/launcher/process.js';
import {
  PEER_COMMIT,
  PEER_EDITS,
  PEER_PURCHASE_PATH,
  PEER_REPO,
  PeerProbe,
  peerDatabase,
  peerVersions,
  startPeer,
  type PeerInstance,
} from '../peer/peer-server.js';
import { saleVerdict, soldOutVerdict, unexpectedAnswers, type Verdict } from '../peer/verdicts.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { cpuSeconds, type Tiers } from './cpu.js';
import { addLoad, load, pickDriver, type Load } from './http-load.js';
import { cli, ROOT, stopAll, until } from './processes.js';
import { benchRedis } from './redis.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const BIG_STOCK = 10_000_000;
const SOLD_OUT_STOCK = 1_000;
const SEGMENTS = 16;

type Side = 'ours' | 'peer';
interface Scenario {
  name: string;
  side: Side;
  kind: 'sale' | 'sold-out';
  /** the status of the answer the scenario counts (a sale, a sold-out refusal) */
  status: string;
}
const SCENARIOS: Scenario[] = [
  { name: 'ours in stock', side: 'ours', kind: 'sale', status: '202' },
  { name: 'peer in stock', side: 'peer', kind: 'sale', status: '201' },
  { name: 'ours sold out', side: 'ours', kind: 'sold-out', status: '409' },
  { name: 'peer sold out', side: 'peer', kind: 'sold-out', status: '410' },
];
const TARGETS: Record<string, string> = { inStockVsPeer: '>= 1.5', soldOutVsPeer: '>= 3' };

/** `seckill up` on the bench's servers: one process, API + order workers, its defaults. */
async function startOurs(o: {
  port: number;
  redisUrl: string;
  databaseUrl: string;
  dir: string;
  logFile: string;
}): Promise<{ base: string; proc: ChildProcess }> {
  // `up` reads its admin token from DATA_DIR (ADMIN_TOKEN given wins): the bench's, for seeding
  writeFileSync(join(o.dir, 'admin-token'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  const out = openSync(o.logFile, 'a');
  const proc = spawn(process.execPath, cli('up'), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      REDIS_URL: o.redisUrl,
      DATABASE_URL: o.databaseUrl,
      DATA_DIR: o.dir,
      PORT: String(o.port),
      ADMIN_TOKEN,
      ...NO_RATE_LIMITS,
    },
    stdio: ['ignore', out, out],
  });
  proc.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') progress(`seckill up exited (${code ?? signal})`);
  });
  const base = `http://127.0.0.1:${o.port}`;
  await until(
    `seckill up (log: ${o.logFile})`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`seckill up exited; see ${o.logFile}`);
      return (await fetch(`${base}/readyz`)).ok;
    },
    120_000,
  );
  return { base, proc };
}

async function seedOurs(base: string, productId: string, total: number) {
  const res = await admin(base, 'PUT', `/admin/products/${productId}?force=true`, {
    total,
    strategy: 'lockfree',
    segments: SEGMENTS,
  });
  if (!res.ok) throw new Error(`seeding ${productId}: ${res.status} ${await res.text()}`);
}

async function ourRows(db: pg.Client, productId: string): Promise<number> {
  const r = await db.query<{ n: string }>(
    'select count(*) as n from orders where product_id = $1',
    [productId],
  );
  return Number(r.rows[0]!.n);
}

/**
 * Sells `units` (a sale of exactly that many) with wrk and returns once the last order row is
 * in: wrk stops sending at the `units`-th sale (wrk.lua's stopAfter) but would sleep out its
 * duration, so it is stopped then. Seconds from the first request to the last row.
 */
async function sellUntilRows(
  run: (signal: AbortSignal) => ReturnType<typeof load>,
  units: number,
  rowsNow: () => Promise<number>,
): Promise<{ load: Awaited<ReturnType<typeof load>>; seconds: number }> {
  const t0 = performance.now();
  const stop = new AbortController();
  let settled = false;
  const running = run(stop.signal).finally(() => (settled = true));
  let rowsSeen = 0;
  let grewAt = performance.now();
  for (;;) {
    const n = await rowsNow();
    if (n >= units) break;
    if (n > rowsSeen) [rowsSeen, grewAt] = [n, performance.now()];
    if ((settled && performance.now() - grewAt > 30_000) || performance.now() - grewAt > 300_000) {
      stop.abort();
      throw new Error(`only ${n} of ${units} order rows`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = (performance.now() - t0) / 1000;
  stop.abort();
  return { load: await running, seconds };
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '6' },
      connections: { type: 'string', default: '100' },
      sales: { type: 'string', default: '20000' },
      'peer-dir': { type: 'string', default: join(homedir(), '.cache', 'seckill', 'peer') },
      'no-build': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
    },
  });
  const duration = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const sales = Number(values.sales);
  const peerDir = values['peer-dir'];
  const driver = pickDriver();
  if (driver !== 'wrk') throw new Error('bench:peer drives both sides with wrk: install wrk');
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    progress(`checking out and building the peer in ${peerDir} (load-tests/peer/setup.sh)`);
    execFileSync('bash', [join(ROOT, 'load-tests', 'peer', 'setup.sh'), '', peerDir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  const run = Date.now().toString(36);
  const work = mkdtempSync(join(tmpdir(), 'seckill-bench-peer-'));
  progress(`logs of both sides in ${work}`);
  const stack = await benchStack({});
  const pathEnv = loadConfig(process.env, { AUTH_MODE: 'dev' }).launcher.searchPath;
  // the peer's Redis keys are fixed: one redis-server per peer instance (ours has the stack's)
  const peerRedis = {
    inStock: await benchRedis(undefined, pathEnv),
    soldOut: await benchRedis(undefined, pathEnv),
    persist: await benchRedis(undefined, pathEnv),
  };
  const children: Array<ChildProcess | undefined> = [];
  const probes: PeerProbe[] = [];
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  const results: Array<Record<string, string | number>> = [];
  const checks: string[] = [];
  let violations = 0;
  const verdict = (v: Verdict) => {
    checks.push(v.line);
    if (!v.ok) violations++;
  };
  const persisted: Record<Side, { ordersPerS: number; seconds: number; apiUsPerOrder: number }> =
    {} as never;
  try {
    const ours = await startOurs({
      port: await freePort(),
      redisUrl: stack.redisUrl,
      databaseUrl: stack.databaseUrl,
      dir: work,
      logFile: join(work, 'seckill-up.log'),
    });
    children.push(ours.proc);
    const peerOf = async (name: keyof typeof peerRedis, stock: number) => {
      const p = await startPeer({
        name,
        peerDir,
        port: await freePort(),
        redisUrl: peerRedis[name].url,
        databaseUrl: await peerDatabase(stack.databaseUrl, `peer_${name.toLowerCase()}`),
        stock,
        logFile: join(work, `peer-${name}.log`),
      });
      children.push(p.proc);
      const probe = await PeerProbe.open(p);
      probes.push(probe);
      return { p, probe };
    };
    progress('starting the peer (in stock, sold out)');
    const peerInStock = await peerOf('inStock', BIG_STOCK);
    const peerSoldOut = await peerOf('soldOut', SOLD_OUT_STOCK);
    // every process of the run is a root, so none is counted as another's child
    const tiers: Tiers = {
      oursAPI: ours.proc.pid,
      oursRedis: stack.redisPid,
      peerInStockAPI: peerInStock.p.proc.pid,
      peerInStockRedis: peerRedis.inStock.pid,
      peerSoldOutAPI: peerSoldOut.p.proc.pid,
      peerSoldOutRedis: peerRedis.soldOut.pid,
      PG: stack.postgresPid,
      loadgen: process.pid,
      persistRedis: peerRedis.persist.pid,
    };
    const tiersOf = (s: Scenario) =>
      s.side === 'ours'
        ? { API: 'oursAPI', Redis: 'oursRedis' }
        : s.kind === 'sale'
          ? { API: 'peerInStockAPI', Redis: 'peerInStockRedis' }
          : { API: 'peerSoldOutAPI', Redis: 'peerSoldOutRedis' };
    const ourProduct = (s: Scenario) => `${s.kind}-${run}`;
    const target = (s: Scenario) =>
      s.side === 'ours' ? ours.base : s.kind === 'sale' ? peerInStock.p.base : peerSoldOut.p.base;
    const wrkArgs = (s: Scenario, stopAfter = 0) => ({
      scriptArgs: [s.side === 'ours' ? 'seckill' : 'peer', String(stopAfter)],
    });
    const path = (side: Side) => (side === 'ours' ? '/seckill' : PEER_PURCHASE_PATH);

    // seeding, and the real sellouts of the sold-out scenarios
    for (const s of SCENARIOS.filter((x) => x.side === 'ours')) {
      await seedOurs(ours.base, ourProduct(s), s.kind === 'sale' ? BIG_STOCK : SOLD_OUT_STOCK);
    }
    progress(`selling out ${SOLD_OUT_STOCK} units on each side first`);
    for (const s of SCENARIOS.filter((x) => x.kind === 'sold-out')) {
      await sellUntilRows(
        (signal) =>
          load(driver, target(s), path(s.side), ourProduct(s), `${s.side}-warm-${run}`, {
            duration: 900,
            connections,
            signal,
            ...wrkArgs(s, SOLD_OUT_STOCK),
          }),
        SOLD_OUT_STOCK,
        s.side === 'ours'
          ? () => ourRows(db, ourProduct(s))
          : async () => (await peerSoldOut.probe.state()).rows,
      );
    }
    const soldOutBase = await persistedAndReconciled(ours.base, ourProduct(SCENARIOS[2]!));
    if (soldOutBase.remaining !== 0) throw new Error(`ours not sold out: ${soldOutBase.remaining}`);
    const peerSoldOutBase = await peerSoldOut.probe.persisted();
    if (peerSoldOutBase.stock !== 0) throw new Error(`peer not sold out: ${peerSoldOutBase.stock}`);
    await new Promise((r) => setTimeout(r, 500)); // ours: the sold-out notice reaches the API

    const totals = new Map<string, Load & { drainCpu: Record<string, number>; sold: number }>();
    let peerSoldBefore = 0;
    for (let round = 1; round <= rounds; round++) {
      // which side goes first alternates, so neither always follows the other's drain
      const order =
        round % 2 === 1 ? SCENARIOS : [SCENARIOS[1]!, SCENARIOS[0]!, SCENARIOS[3]!, SCENARIOS[2]!];
      for (const s of order) {
        progress(
          `round ${round}/${rounds}, ${s.name}: ${connections} connections for ${duration} s`,
        );
        const names = tiersOf(s);
        const cpuBefore = cpuSeconds(tiers);
        const l = await load(
          driver,
          target(s),
          path(s.side),
          ourProduct(s),
          `${s.side}-${s.kind}-r${round}-${run}`,
          {
            duration,
            connections,
            ...wrkArgs(s),
          },
        );
        const cpuWindow = cpuSeconds(tiers);
        progress(
          `  ${l.requests} answers in ${l.seconds.toFixed(1)} s: ${JSON.stringify(l.status)}`,
        );
        // sales: until every order of the round is a row (the next scenario must not pay for it)
        let sold = 0;
        if (s.kind === 'sale' && s.side === 'ours') {
          const r = await persistedAndReconciled(ours.base, ourProduct(s));
          sold = r.total - r.remaining - (totals.get(s.name)?.sold ?? 0);
        } else if (s.kind === 'sale') {
          const st = await peerInStock.probe.persisted();
          sold = BIG_STOCK - st.stock - peerSoldBefore;
          peerSoldBefore += sold;
        }
        const cpuDrained = cpuSeconds(tiers);
        const pick = (c: Record<string, number>, from: Record<string, number>) => ({
          API: c[names.API]! - from[names.API]!,
          Redis: c[names.Redis]! - from[names.Redis]!,
          PG: c.PG! - from.PG!,
          loadgen: c.loadgen! - from.loadgen!,
        });
        const measured = {
          ...l,
          redisCommands: 0,
          cpu: pick(cpuWindow, cpuBefore),
          drainCpu: pick(cpuDrained, cpuBefore),
          sold,
        };
        const t = totals.get(s.name);
        if (t) {
          addLoad(t, measured);
          for (const [k, v] of Object.entries(measured.drainCpu))
            t.drainCpu[k] = (t.drainCpu[k] ?? 0) + v;
          t.sold += sold;
        } else totals.set(s.name, measured);
      }
    }

    for (const s of SCENARIOS) {
      const l = totals.get(s.name)!;
      const counted = l.status[s.status] ?? 0;
      const us = (tier: string, n: number) => Math.round((l.cpu[tier]! * 1e6) / Math.max(1, n));
      results.push({
        scenario: s.name,
        'req/s': Math.round(l.requests / l.seconds),
        'sold/s': s.kind === 'sale' ? Math.round(counted / l.seconds) : 0,
        'refused/s': s.kind === 'sold-out' ? Math.round(counted / l.seconds) : 0,
        p50ms: l.percentiles!.p50,
        p99ms: l.percentiles!.p99,
        'API us/answer': us('API', l.requests),
        'API us/sale to row':
          s.kind === 'sale' ? Math.round((l.drainCpu.API! * 1e6) / Math.max(1, l.sold)) : '-',
        'Redis us/answer': us('Redis', l.requests),
        'PG us/answer': us('PG', l.requests),
        'loadgen us/req': us('loadgen', l.requests),
        other: unexpectedAnswers(l.status, [s.status]),
        errors: l.errors,
      });
      const unexpected = unexpectedAnswers(l.status, [s.status]);
      // what each side's stores say: units sold, order rows, whether they agree (and why)
      let facts: { sold: number; rows: number; agree: boolean; empty: boolean; note: string };
      if (s.side === 'ours') {
        const r = await persistedAndReconciled(ours.base, ourProduct(s));
        facts = {
          sold: r.total - r.remaining,
          rows: r.persistedOrders,
          agree: r.ok && r.remaining >= 0 && r.persisted === r.total - r.remaining,
          empty: r.ok && r.remaining === 0,
          note: `reconciliation ${r.ok ? 'clean' : r.problems.join('; ')}, remaining ${r.remaining}`,
        };
      } else {
        const inst = s.kind === 'sale' ? peerInStock : peerSoldOut;
        const st = await inst.probe.state();
        const sold = inst.p.seeded - st.stock;
        const agree = st.stock >= 0 && st.buyers === sold;
        facts = {
          sold,
          rows: st.rows,
          agree,
          empty: agree && st.stock === 0,
          note: `stock ${st.stock} + sold ${sold} = ${st.stock + sold} (seeded ${inst.p.seeded}), buyers ${st.buyers}`,
        };
      }
      verdict(
        s.kind === 'sale'
          ? saleVerdict({
              scenario: s.name,
              accepted: counted,
              sold: facts.sold,
              rows: facts.rows,
              inFlightMax: connections * rounds,
              unexpected,
              errors: l.errors,
              storesAgree: facts.agree,
              storesNote: facts.note,
            })
          : soldOutVerdict({
              scenario: s.name,
              requests: l.requests,
              refusals: counted,
              soldDuring: facts.sold - SOLD_OUT_STOCK,
              rowsAdded: facts.rows - SOLD_OUT_STOCK,
              errors: l.errors,
              storesAgree: facts.empty,
              storesNote: facts.note,
            }),
      );
    }

    // orders persisted end to end: a fresh sale of `sales` units on each side, alone
    for (const side of ['ours', 'peer'] as const) {
      progress(`${side}: orders persisted end to end, a sale of ${sales} units`);
      const s: Scenario = { name: `${side} persisted`, side, kind: 'sale', status: '' };
      let base = ours.base;
      let apiTier = 'oursAPI';
      let rowsNow: () => Promise<number>;
      let persistPeer: { p: PeerInstance; probe: PeerProbe } | undefined;
      const productId = `persist-${run}`;
      if (side === 'ours') {
        await seedOurs(ours.base, productId, sales);
        rowsNow = () => ourRows(db, productId);
      } else {
        persistPeer = await peerOf('persist', sales);
        tiers.persistAPI = persistPeer.p.proc.pid;
        base = persistPeer.p.base;
        apiTier = 'persistAPI';
        const probe = persistPeer.probe;
        rowsNow = async () => (await probe.state()).rows;
      }
      const cpuBefore = cpuSeconds(tiers);
      const { load: l, seconds } = await sellUntilRows(
        (signal) =>
          load(driver, base, path(side), productId, `${side}-persist-${run}`, {
            duration: 900,
            connections,
            signal,
            ...wrkArgs(s, sales),
          }),
        sales,
        rowsNow,
      );
      const cpuAfter = cpuSeconds(tiers);
      persisted[side] = {
        ordersPerS: Math.round(sales / seconds),
        seconds: Math.round(seconds * 100) / 100,
        apiUsPerOrder: Math.round(((cpuAfter[apiTier]! - cpuBefore[apiTier]!) * 1e6) / sales),
      };
      const sold = side === 'ours' ? (l.status['202'] ?? 0) : (l.status['201'] ?? 0);
      const rows = await rowsNow();
      let storesAgree: boolean;
      let note: string;
      if (side === 'ours') {
        const r = await persistedAndReconciled(ours.base, productId);
        storesAgree = r.ok && r.remaining === 0 && r.persisted === sales;
        note = `reconciliation ${r.ok ? 'clean' : r.problems.join('; ')}, remaining ${r.remaining}`;
      } else {
        const st = await persistPeer!.probe.state();
        storesAgree = st.stock === 0 && st.buyers === sales;
        note = `stock ${st.stock}, buyers ${st.buyers}`;
      }
      progress(`${side}: the last of ${sales} order rows after ${seconds.toFixed(2)} s`);
      verdict(
        saleVerdict({
          scenario: s.name,
          accepted: sold,
          sold: sales,
          rows,
          inFlightMax: 0,
          // after the last unit, requests in flight are refused as sold out
          unexpected: unexpectedAnswers(
            l.status,
            side === 'ours' ? ['202', '409'] : ['201', '410'],
          ),
          errors: l.errors,
          storesAgree,
          storesNote: note,
        }),
      );
    }
  } finally {
    await db.end();
    for (const p of probes) await p.close();
    await stopAll(children);
    await Promise.all(Object.values(peerRedis).map((r) => r.stop()));
    await stack.stop();
    rmSync(work, { recursive: true, force: true });
  }

  const by = (name: string) => results.find((r) => r.scenario === name)!;
  const num = (name: string, col: string) => Number(by(name)[col]);
  const ratios = {
    inStockVsPeer: ratio(num('ours in stock', 'sold/s'), num('peer in stock', 'sold/s')),
    soldOutVsPeer: ratio(num('ours sold out', 'refused/s'), num('peer sold out', 'refused/s')),
    persistedVsPeer: ratio(persisted.ours.ordersPerS, persisted.peer.ordersPerS),
  };
  const cpu = {
    method:
      'CPU seconds of each process (/proc/<pid>/stat utime+stime) over the scenario windows, per answer; ' +
      '"to row": over the windows plus the drains until every sale of the round is an order row, per unit sold',
    oursApiUsPerRefusal: num('ours sold out', 'API us/answer'),
    peerApiUsPerRefusal: num('peer sold out', 'API us/answer'),
    oursApiUsPerSale: num('ours in stock', 'API us/answer'),
    peerApiUsPerSale: num('peer in stock', 'API us/answer'),
    oursApiUsPerSaleToRow: num('ours in stock', 'API us/sale to row'),
    peerApiUsPerSaleToRow: num('peer in stock', 'API us/sale to row'),
    oursApiUsPerPersistedOrder: persisted.ours.apiUsPerOrder,
    peerApiUsPerPersistedOrder: persisted.peer.apiUsPerOrder,
  };
  const figures = {
    bench: 'peer',
    peer: {
      repo: PEER_REPO,
      commit: PEER_COMMIT,
      edits: PEER_EDITS,
      versions: peerVersions(peerDir),
      config:
        'one process (API + its BullMQ processor), its own redis-server and database; env: ' +
        'sale window open, STOCK_QUANTITY, NODE_ENV=production (TypeORM query logging off), ' +
        'log to a file at its default level',
    },
    ours: `seckill up (API + order workers in one process, defaults but the rate limits off), lockfree N=${SEGMENTS}`,
    loadDriver: `${driver} (load-tests/bench/wrk.lua), 1 thread`,
    machine: machine(),
    durationS: duration,
    rounds,
    connections,
    sales,
    results,
    persisted,
    ratios,
    cpu,
    checks,
    violations,
  };
  const m = figures.machine;
  const text = [
    `\nPeer: ${PEER_REPO} @ ${PEER_COMMIT} (node ${m.node}), ${figures.peer.config}`,
    `  resolved: ${Object.entries(figures.peer.versions)
      .map(([n, v]) => `${n}@${v}`)
      .join(', ')}`,
    ...PEER_EDITS.map((e) => `  edit: ${e}`),
    `Ours: ${figures.ours}`,
    `Load generator: ${figures.loadDriver}, ${connections} connections, ${rounds} interleaved rounds ` +
      `of ${duration} s per scenario, a new shopper per request`,
    `Machine: ${m.cpus} x ${m.model}, ${m.memGiB} GiB, shared with other work\n`,
    table(results),
    '',
    table(
      (['ours', 'peer'] as const).map((side) => ({
        'persisted end to end': side,
        orders: sales,
        's (first request -> last row)': persisted[side].seconds,
        'orders/s': persisted[side].ordersPerS,
        'API us/order': persisted[side].apiUsPerOrder,
      })),
    ),
    '',
    table(
      Object.entries(ratios).map(([name, value]) => ({
        ratio: name,
        value,
        target: TARGETS[name] ?? '',
      })),
    ),
    '',
    `API CPU per refusal: ours ${cpu.oursApiUsPerRefusal} us, peer ${cpu.peerApiUsPerRefusal} us; ` +
      `per accepted sale (window): ours ${cpu.oursApiUsPerSale} us, peer ${cpu.peerApiUsPerSale} us; ` +
      `to its order row: ours ${cpu.oursApiUsPerSaleToRow} us, peer ${cpu.peerApiUsPerSaleToRow} us`,
    '',
    'invariants:',
    ...checks.map((c) => `  ${c}`),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) saveRun('peer', text, values['update-report']);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  if (violations > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
