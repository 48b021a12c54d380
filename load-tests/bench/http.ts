/**
 * `npm run bench`: the k6 scenario matrix (load-tests/compare.js) driven from Node with wrk
 * (autocannon when wrk is not installed), in ONE run against one API process and one worker
 * process (the built dist/, as in production):
 *   - bare Express: a minimal Express 5 app in its own process (bare-express.mjs), the framework's
 *     own speed on this machine;
 *   - ceiling: POST /bench/noop, the shop's middleware, validation and auth, no Redis;
 *   - global (1 segment, one lock), segmented N = 4, 16, 64, lockfree (16 segments), each on its
 *     own product with stock that outlasts the run, so accepted/s is the strategy's throughput;
 *   - global and segmented N=16 + restocks: the same sale while something holds its segment
 *     locks the full way now and then (held-lock.ts's restocker, --restocks-per-s);
 *   - the held-lock baseline (held-lock.ts): global and segmented N = 4, 16, 64 with this
 *     project's lock held the full way by the application (acquire, read, write, release), direct
 *     and behind a delaying proxy at +1 ms each way;
 *   - lockfree + limits: lockfree N=16 through a second API process with rate limits on (per user
 *     and per client address, set so they never refuse here: the cost of asking them);
 *   - lockfree N=16 keyed: an Idempotency-Key per purchase (the record's claim and settle);
 *   - production: the shape a launch runs: segmented N=16 (a lock per segment), limits on (the
 *     shipped per-user default, 5/s; wrk is one address standing for many clients, so the
 *     per-address limit is asked but set not to refuse) and an Idempotency-Key per purchase;
 *   - after sold out: a sold-out product, answered from memory;
 *   - room poll: GET /products/:id/queue of one shopper in a waiting room's lobby, answered
 *     from memory ahead of Express (pollVsRawHttp: against raw node:http);
 *   - CORS: a second API process with CORS_ORIGINS set, sent a shop page's Origin: a sale
 *     (lockfree N=16) and a sold-out refusal, each against the same without CORS, and the
 *     preflight a browser sends before a purchase, against raw node:http.
 * Every shopper id is distinct. After each scenario the run waits for persistence and checks the
 * invariants through the admin API (reconciliation clean, accepted == order rows, no oversell).
 * Scenarios run in interleaved rounds (every scenario once per round), so a slow spell of the
 * machine hits them all alike; figures are totals over the rounds. Prints a table and the ratios
 * with their targets and ends with one JSON line; writes report.md, bench.json and SVG charts to
 * load-tests/results/raw/<run>/ (--update-report: to load-tests/results/, the committed report).
 *
 * `--rtt` runs the round-trip grid instead (rtt.md): the held-lock baseline and today's global,
 * segmented N=16 and lockfree N=16, each direct and at +0.5, +1 and +2 ms each way.
 *
 * Options: --duration 5 (s per scenario per round) --rounds 3 --connections 100
 *          --only <scenario>[,<scenario>...] --rtt --no-write --update-report --no-build
 *          --restocks-per-s 20 --cpu-prof <dir> (V8 profile of each API process)
 *          --redis-delay-ms <d> (the main API and worker behind a proxy)
 *          --redis-url --database-url (else throwaway servers)
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { createRedis } from '../../src/redis/connection.js';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled, type Reconcile } from './admin.js';
import { capacityText, perSaleOf, runCapacity } from './capacity.js';
import { cpuSeconds, type Tiers } from './cpu.js';
import { forgetSegments } from './fresh-keys.js';
import { freshOrders } from './fresh-orders.js';
import { writeReport, type Row } from './http-report.js';
import { addLoad, load, pickDriver, type Load } from './http-load.js';
import {
  defaultScenarios,
  heldArithmetic,
  heldName,
  parseOnly,
  NOT_RUN,
  ratioRows,
  ratiosOf,
  SCENARIOS,
  type HeldRow,
  type Measured,
  type Scenario,
} from './http-scenarios.js';
import { delayedServers, delayProxy } from './http-servers.js';
import { HELD_WAITS } from './held-lock.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, percentile, pickScenarios, progress, table } from './report.js';
import { writeRttReport } from './rtt-report.js';
import { quiet } from './settle.js';
import { updateWhySegments } from './why-segments.js';
import { benchStack } from './stack.js';
import { startWebhookPair, type ReceiverStats } from './webhook-pair.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

/** Outlasts any run here, so accepted/s is never capped by the stock. */
const BIG_STOCK = 10_000_000;
const SOLD_OUT_STOCK = 1_000;

/** Every command Redis has run (scripts' inner ones too), without INFO itself. */
async function redisCommands(redis: Redis): Promise<number> {
  let n = 0;
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info') n += Number(m[2]);
  }
  return n;
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '3' },
      connections: { type: 'string', default: '100' },
      only: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
      'no-build': { type: 'boolean', default: false },
      'cpu-prof': { type: 'string' },
      rtt: { type: 'boolean', default: false },
      warmup: { type: 'string', default: '2' },
      'restocks-per-s': { type: 'string', default: '20' },
      'redis-delay-ms': { type: 'string' },
      'redis-url': { type: 'string' },
      'database-url': { type: 'string' },
    },
  });
  const duration = Number(values.duration);
  const rounds = Number(values.rounds);
  const warmup = Number(values.warmup);
  const connections = Number(values.connections);
  const restocksPerS = Number(values['restocks-per-s']);
  const only = values.only === undefined ? undefined : parseOnly(values.only);
  const chosen = only ? pickScenarios(SCENARIOS, only) : defaultScenarios(values.rtt);
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({
    redisUrl: values['redis-url'],
    databaseUrl: values['database-url'],
  });
  const run = Date.now().toString(36);
  const delayMs = Number(values['redis-delay-ms'] ?? 0);
  const proxy = delayMs > 0 ? await delayProxy(stack.redisUrl, delayMs) : undefined;
  const [port, barePort, limitedPort, rawPort, expressPort, corsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    WORKER_PORT: '0',
    REDIS_URL: proxy?.url ?? stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `bench${run}`.slice(0, 16),
    QUEUE_PREFIX: `{bench${run}}`,
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN,
    BENCH_ROUTES: 'true',
    SALE_TOKEN_SECRET: 'bench-sale-token-secret-0123456789abcdef',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    NODE_ENV: 'development',
  };
  const base = `http://127.0.0.1:${port}`;
  const limitedBase = `http://127.0.0.1:${limitedPort}`;
  const bareBase = `http://127.0.0.1:${barePort}`;
  const rawBase = `http://127.0.0.1:${rawPort}`;
  const expressBase = `http://127.0.0.1:${expressPort}`;
  const corsBase = `http://127.0.0.1:${corsPort}`;
  const driver = pickDriver();
  progress(`load driver: ${driver}`);
  const profDir = values['cpu-prof'];
  const profFlags = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  // the held-lock servers and the APIs behind delaying proxies (only what `chosen` needs)
  const servers = await delayedServers(chosen, stack.redisUrl, env);
  const api = child([...profFlags, ...cli('serve')], env, 'API');
  const worker = child(cli('worker'), env, 'worker');
  // every shopper id is new, and wrk is one client address: limits this high are asked on
  // every purchase and never refuse one
  const limited = chosen.some((s) => s.limited)
    ? child(
        [...profFlags, ...cli('serve')],
        {
          ...env,
          PORT: String(limitedPort),
          RATE_LIMIT_USER: '5/s',
          RATE_LIMIT_IP: '100000000/s',
        },
        'API (limits on)',
      )
    : undefined;
  const expressOnly = chosen.some((s) => s.express)
    ? child(
        [...profFlags, ...cli('serve')],
        { ...env, PORT: String(expressPort), FAST_PATH: 'false' },
        'API (no fast path)',
      )
    : undefined;
  const withCors = chosen.some((s) => s.cors)
    ? child(
        [...profFlags, ...cli('serve')],
        { ...env, PORT: String(corsPort), CORS_ORIGINS: 'https://shop.example' },
        'API (CORS)',
      )
    : undefined;
  // the production shape with every order event pushed to a local receiver, on a pair of its own
  const hooks = chosen.some((s) => s.webhook)
    ? await startWebhookPair({
        databaseUrl: stack.databaseUrl,
        env: { ...env, RATE_LIMIT_USER: '5/s', RATE_LIMIT_IP: '100000000/s' },
        run,
      })
    : undefined;
  let hookStats: (ReceiverStats & { orders: number }) | undefined;
  const raw = chosen.some((s) => s.kind === 'raw')
    ? child([join(ROOT, 'load-tests', 'bench', 'raw-http.mjs'), String(rawPort)], env, 'raw')
    : undefined;
  const bare = chosen.some((s) => s.kind === 'bare')
    ? child([join(ROOT, 'load-tests', 'bench', 'bare-express.mjs'), String(barePort)], env, 'bare')
    : undefined;
  const probe = createRedis(stack.redisUrl, { name: 'bench-probe' });
  const restockHolds = new Map<string, number>();
  const tiers: Tiers = {
    API: api.pid,
    worker: worker.pid,
    Redis: stack.redisPid,
    PG: stack.postgresPid,
    loadgen: process.pid,
    // not reported: kept out of the load generator's children
    bare: bare?.pid,
    raw: raw?.pid,
    proxy: proxy?.proc.pid,
    cors: withCors?.pid,
  };
  const results: Row[] = [];
  const healthzMs: number[] = [];
  const checks: string[] = [];
  let violations = 0;
  try {
    await until('the API', async () => (await fetch(`${base}/readyz`)).ok, 60_000);
    if (limited)
      await until('the limited API', async () => (await fetch(`${limitedBase}/readyz`)).ok, 60_000);
    if (withCors)
      await until('the CORS API', async () => (await fetch(`${corsBase}/readyz`)).ok, 60_000);
    if (bare)
      await until('bare Express', async () => (await fetch(`${bareBase}/healthz`)).ok, 30_000);
    if (raw)
      await until('raw node:http', async () => (await fetch(`${rawBase}/healthz`)).ok, 30_000);
    if (expressOnly)
      await until(
        'the API without fast path',
        async () => (await fetch(`${expressBase}/readyz`)).ok,
        60_000,
      );
    const sells = (s: Scenario) => s.kind === 'sale' || s.kind === 'held';
    /**
     * A scenario's product: a selling one has a product of its own in every round (`round`; 0:
     * the warm-up), checked once its round is persisted, before the order tables are emptied
     */
    const productOf = (s: Scenario, round?: number) =>
      `${s.name.replace(/[^A-Za-z0-9.]+/g, '-')}-${run}` +
      (sells(s) && round !== undefined ? `-r${round}` : '');
    /** where a scenario's product is seeded and reconciled */
    const adminBase = (s: Scenario) =>
      s.kind === 'held' ? servers.held(s.delayMs ?? 0).base : s.webhook ? hooks!.base : base;
    const seed = async (s: Scenario, productId: string, room = s.kind === 'poll') => {
      const q = `force=true${s.kind === 'poll' ? '&discard=line' : ''}`;
      const res = await admin(adminBase(s), 'PUT', `/admin/products/${productId}?${q}`, {
        total: s.kind === 'sold-out' ? SOLD_OUT_STOCK : BIG_STOCK,
        strategy: s.strategy,
        ...(s.strategy !== 'global' && { segments: s.segments }),
        ...(room && {
          startsAt: new Date(Date.now() + 3_600_000).toISOString(),
          waitingRoom: { admitPerSecond: 100, maxActive: 100, admittedForSeconds: 60 },
        }),
      });
      if (!res.ok) throw new Error(`seeding ${productId}: ${res.status} ${await res.text()}`);
      if (!room) return;
      // the one shopper whose place the row polls
      const joined = await fetch(`${base}/products/${productId}/queue`, {
        method: 'POST',
        headers: { 'x-user-id': `${productId}-shopper` },
      });
      if (!joined.ok) throw new Error(`joining ${productId}: ${joined.status}`);
    };
    /** every process of the run but this one (the load generator) */
    const everyProcess: Tiers = Object.fromEntries(
      [
        api,
        worker,
        limited,
        expressOnly,
        withCors,
        raw,
        bare,
        hooks?.api,
        hooks?.worker,
        hooks?.receiver,
        ...servers.procs(),
      ]
        .filter((c) => c?.pid !== undefined)
        .map((c, i) => [`process ${i} (${c!.spawnargs.slice(-2).join(' ')})`, c!.pid])
        .concat([
          ['Redis', stack.redisPid],
          ['PG', stack.postgresPid],
        ]),
    );
    const databases = [stack.databaseUrl, ...(hooks ? [hooks.databaseUrl] : [])];
    /**
     * Before each row: the order tables emptied and a checkpoint (no row pays for the rows an
     * earlier one left), then every process idle (no row pays for an earlier one's backlog: the
     * worker's, the event relay's, the webhook deliveries', an autovacuum's)
     */
    const settle = async (before: string) => {
      await freshOrders(databases);
      const { waitedMs, busy } = await quiet(`the run before ${before}`, everyProcess);
      if (busy) progress(`  settled in ${waitedMs} ms (busy: ${busy})`);
    };
    /** each selling row's invariants, checked after each of its rounds */
    const sold = new Map<string, Reconcile[]>();
    for (const s of chosen) {
      if (s.kind !== 'sold-out') continue;
      const productId = productOf(s);
      await seed(s, productId);
      progress(`${s.name}: selling out ${SOLD_OUT_STOCK} units first`);
      await load(driver, base, '/seckill', productId, `${productId}-warm`, {
        duration: 2,
        connections,
      });
      await new Promise((r) => setTimeout(r, 500)); // sold-out notices reach the API
      // checked now: the rows' tables are emptied before each row
      const r = await persistedAndReconciled(base, productId);
      const clean = r.ok && r.remaining === 0 && r.persisted === SOLD_OUT_STOCK;
      checks.push(
        `${s.name}: ${clean ? 'OK' : 'VIOLATED'}: sold out first: ${r.persisted} units persisted, ` +
          `remaining ${r.remaining}, reconciliation ${r.ok ? 'clean' : r.problems.join('; ')}`,
      );
      if (!clean) violations++;
    }
    // Rounds interleave the scenarios, so a slow spell of this shared machine hits all of them;
    // round 0 warms every serving process up (its JIT, its connections), so the first row a
    // process serves is not its cold start, whichever rows ran (a partial run's first row too).
    const totals = new Map<string, Load>();
    for (let round = warmup > 0 ? 0 : 1; round <= rounds; round++) {
      for (const s of chosen) {
        const seconds = round === 0 ? warmup : duration;
        progress(
          round === 0
            ? `warm-up, ${s.name}: ${connections} connections for ${seconds} s`
            : `round ${round}/${rounds}, ${s.name}: ${connections} connections for ${seconds} s`,
        );
        const d = s.delayMs ?? 0;
        const served =
          s.kind === 'held'
            ? servers.held(d)
            : s.kind === 'sale' && d
              ? servers.api(d)
              : s.webhook
                ? { base: hooks!.base, proc: hooks!.api }
                : s.limited
                  ? { base: limitedBase, proc: limited! }
                  : s.express
                    ? { base: expressBase, proc: expressOnly! }
                    : s.cors
                      ? { base: corsBase, proc: withCors! }
                      : { base, proc: api };
        const target = s.kind === 'raw' ? rawBase : s.kind === 'bare' ? bareBase : served.base;
        const scenarioTiers = {
          ...tiers,
          API: served.proc.pid,
          ...(s.webhook && { worker: hooks!.worker.pid }),
          ...(d && { proxy: servers.proxy(d)?.pid }),
        };
        const productId = productOf(s, round);
        // a room lives for its row only: every API process's admitter ticks it while it lives
        if (sells(s) || s.kind === 'poll') await seed(s, productId);
        if (s.webhook) await hooks!.reset(0);
        await settle(s.name);
        const path =
          s.kind === 'ceiling'
            ? '/bench/noop'
            : s.kind === 'poll'
              ? `/products/${productId}/queue`
              : '/seckill';
        const before = await redisCommands(probe);
        const cpuBefore = cpuSeconds(scenarioTiers);
        const poll = s.kind === 'poll';
        const tag = poll ? `${productId}-shopper` : `${productId}-r${round}`;
        const shape = poll ? 'poll' : s.kind === 'preflight' ? 'preflight' : s.cors ? 'cors' : '';
        const restocks = s.restocks ? servers.held(0).base : undefined;
        if (restocks) {
          const started = await admin(restocks, 'POST', '/bench/restocks', {
            productId,
            segments: s.segments,
            perSecond: restocksPerS,
          });
          if (!started.ok) throw new Error(`restocks of ${productId}: ${started.status}`);
        }
        const l = await load(driver, target, path, productId, tag, {
          duration: seconds,
          connections,
          ...(s.keyed && { keyed: true }),
          ...(shape && { scriptArgs: [shape] }),
        });
        if (restocks) {
          const { holds } = (await (await admin(restocks, 'DELETE', '/bench/restocks')).json()) as {
            holds: number;
          };
          if (round > 0) restockHolds.set(s.name, (restockHolds.get(s.name) ?? 0) + holds);
        }
        const cpuAfter = cpuSeconds(scenarioTiers);
        const cpu = Object.fromEntries(
          Object.entries(cpuAfter).map(([t, s]) => [t, s - (cpuBefore[t] ?? s)]),
        );
        // the bare Express / raw node:http process stands in for the API in its own scenario
        if (s.kind === 'bare') cpu.API = cpu.bare ?? 0;
        if (s.kind === 'raw') cpu.API = cpu.raw ?? 0;
        const measured = { ...l, redisCommands: (await redisCommands(probe)) - before, cpu };
        // this row's requests (and sales) are done, and their events delivered, before the next
        // row's settle empties the tables: the invariants are checked now
        if (sells(s)) {
          const r = await persistedAndReconciled(adminBase(s), productId);
          if (s.webhook) {
            const got = await hooks!.delivered(r.persistedOrders, 300_000);
            if (round > 0) hookStats = addHookStats(hookStats, got, r.persistedOrders);
          }
          if (round > 0) sold.set(s.name, [...(sold.get(s.name) ?? []), r]);
          // checked: its segments' keys go, as its orders go before the next row
          await forgetSegments(probe, [productId]);
        }
        if (s.kind === 'poll') await seed(s, productId, false);
        if (s.kind === 'sold-out' && round > 0) {
          sold.set(s.name, [
            ...(sold.get(s.name) ?? []),
            await persistedAndReconciled(base, productId),
          ]);
        }
        if (round === 0) continue;
        const t = totals.get(s.name);
        if (t) addLoad(t, measured);
        else totals.set(s.name, measured);
      }
    }
    // /healthz while 400 connections hammer purchases of a product on sale (lockfree N=16)
    const hammered = !values.rtt && chosen.find((s) => s.name === 'lockfree N=16');
    if (hammered) {
      progress(`/healthz under load: 400 connections buying for ${duration} s`);
      // a product of its own: the rounds' invariants count the sales of theirs
      const productId = `healthz-${run}`;
      await settle('/healthz under load');
      const seeded = await admin(base, 'PUT', `/admin/products/${productId}?force=true`, {
        total: BIG_STOCK,
        strategy: 'lockfree',
        segments: 16,
      });
      if (!seeded.ok) throw new Error(`seeding ${productId}: ${seeded.status}`);
      let polling = true;
      const poll = (async () => {
        while (polling) {
          const t0 = performance.now();
          await fetch(`${base}/healthz`).then(
            (r) => r.arrayBuffer(),
            () => undefined,
          );
          healthzMs.push(performance.now() - t0);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      await load(driver, base, '/seckill', productId, `${productId}-healthz`, {
        duration,
        connections: 400,
      });
      polling = false;
      await poll;
      await persistedAndReconciled(base, productId);
    }
    for (const s of chosen) {
      const l = totals.get(s.name)!;
      l.latencies.sort((a, b) => a - b);
      const accepted = l.status['202'] ?? 0;
      const fiveXX = Object.entries(l.status)
        .filter(([c]) => c.startsWith('5') && c !== '503')
        .reduce((a, [, n]) => a + n, 0);
      results.push({
        scenario: s.name,
        'req/s': Math.round(l.requests / l.seconds),
        'accepted/s': s.kind === 'sale' || s.kind === 'held' ? Math.round(accepted / l.seconds) : 0,
        p50ms: l.percentiles?.p50 ?? percentile(l.latencies, 50),
        p95ms: l.percentiles?.p95 ?? percentile(l.latencies, 95),
        p99ms: l.percentiles?.p99 ?? percentile(l.latencies, 99),
        'redis cmd/req': Math.round((l.redisCommands / Math.max(1, l.requests)) * 100) / 100,
        'redis cmd/sale':
          s.kind === 'sale' || s.kind === 'held'
            ? Math.round((l.redisCommands / Math.max(1, accepted)) * 10) / 10
            : '-',
        ...Object.fromEntries(
          ['API', 'worker', 'Redis', 'PG', 'loadgen'].map((t) => [
            `${t} us/req`,
            l.cpu[t] === undefined ? '-' : Math.round((l.cpu[t] * 1e6) / Math.max(1, l.requests)),
          ]),
        ),
        // not "409": integer-like keys would jump to the front of the table
        '409s': l.status['409'] ?? 0,
        '503s': l.status['503'] ?? 0,
        '5xx': fiveXX,
        errors: l.errors,
      });
      if (fiveXX > 0 || l.errors > 0) {
        violations++;
        checks.push(`${s.name}: ${fiveXX} 5xx, ${l.errors} errors`);
      }
      if (s.kind === 'poll' || s.kind === 'preflight') {
        // a poll is an answer of the shopper's place, a preflight a 204: anything else is not one
        const expected = s.kind === 'poll' ? '200' : '204';
        const good = l.status[expected] ?? 0;
        const others = Object.values(l.status).reduce((a, n) => a + n, 0) - good;
        checks.push(
          `${s.name}: ${others ? 'VIOLATED' : 'OK'}: ${good} answers ${expected}, ${others} other answers`,
        );
        if (others) violations++;
      }
      if (s.kind === 'raw' || s.kind === 'bare' || s.kind === 'ceiling') continue;
      if (s.kind === 'preflight' || s.kind === 'poll') continue;
      const rs = sold.get(s.name) ?? [];
      if (s.kind === 'sold-out') {
        // its orders were persisted and checked once sold out; since, nothing may sell
        const still = rs.every((r) => r.remaining === 0 && r.pending === 0);
        const good = accepted === 0 && still;
        checks.push(
          `${s.name}: ${good ? 'OK' : 'VIOLATED'}: accepted ${accepted}, ` +
            `remaining 0 and nothing pending after every round: ${still}`,
        );
        if (!good) violations++;
        continue;
      }
      const sum = (f: (r: Reconcile) => number) => rs.reduce((a, r) => a + f(r), 0);
      const units = sum((r) => r.total - r.remaining);
      // the driver stops at each deadline with up to `connections` requests in flight: their
      // sales are real (and persisted) but their 202s are never read.
      const cutOff = units - accepted;
      const good =
        rs.length === rounds &&
        rs.every((r) => r.ok && r.remaining >= 0 && r.persisted === r.total - r.remaining) &&
        cutOff >= 0 &&
        cutOff <= connections * rounds;
      const holds = restockHolds.get(s.name);
      checks.push(
        `${s.name}: ${good ? 'OK' : 'VIOLATED'}: accepted ${accepted} (+${cutOff} cut off in flight), ` +
          (holds === undefined ? '' : `${holds} restocks held a segment lock, `) +
          `sold ${units}, order rows ${sum((r) => r.persistedOrders)}, ` +
          `reconciliation ${rs.every((r) => r.ok) ? 'clean' : rs.flatMap((r) => r.problems).join('; ')} ` +
          `(a product a round)`,
      );
      if (!good) violations++;
    }
    if (hookStats) {
      const lags = [...hookStats.lagsMs].sort((a, b) => a - b);
      const good = hookStats.acked === hookStats.orders && hookStats.unsigned === 0;
      checks.push(
        `production + webhook: ${good ? 'OK' : 'VIOLATED'}: ${hookStats.acked} order events acknowledged by the receiver for ${hookStats.orders} orders ` +
          `(delivery lag p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms)`,
      );
      if (!good) violations++;
    }
  } finally {
    probe.disconnect();
    await servers.stop();
    await stopAll([api, worker, limited, expressOnly, withCors, raw, bare, proxy?.proc]);
    await hooks?.stop();
    await stack.stop();
  }

  const by = (name: string) => results.find((r) => r.scenario === name);
  const acc = (name: string) => Number(by(name)?.['accepted/s'] ?? 0);
  const ratios = ratiosOf(
    new Map<string, Measured>(
      results.map((r) => [
        String(r.scenario),
        { accepted: Number(r['accepted/s']), answered: Number(r['req/s']) },
      ]),
    ),
  );
  // CPU time of each process over the scenario's windows (/proc), divided by its answers
  const us = (name: string, col: string) => {
    const v = by(name)?.[col];
    return typeof v === 'number' ? v : null;
  };
  const perSale = (name: string, tier: string) => perSaleOf(by(name), tier);
  // the held-lock rows' lock and CPU, direct and at +1 ms: why their ratio is what it is
  const heldRow = (name: string): HeldRow => ({
    accepted: acc(name),
    serverUs: perSale(name, 'API') ?? 0,
    allUs: ['API', 'Redis', 'loadgen', 'worker', 'PG'].reduce(
      (a, t) => a + (perSale(name, t) ?? 0),
      0,
    ),
  });
  const held = [0, 1]
    .filter((d) => by(heldName(1, d)) && by(heldName(16, d)))
    .map((d) => ({
      delayMs: d,
      ...heldArithmetic(heldRow(heldName(1, d)), heldRow(heldName(16, d)), machine().cpus),
    }));
  healthzMs.sort((a, b) => a - b);
  const cpu = {
    method:
      'CPU seconds of each process (/proc/<pid>/stat utime+stime) over the scenario windows, per answer',
    apiUsPerRefusal: us('after sold out', 'API us/req'),
    apiUsPerRefusalNoFastPath: us('after sold out (no fast path)', 'API us/req'),
    apiUsPerCorsRefusal: us('after sold out + CORS', 'API us/req'),
    apiUsPerPreflight: us('CORS preflight', 'API us/req'),
    apiUsPerRawHttp: us('raw node:http', 'API us/req'),
    apiUsPerSale:
      perSale('lockfree N=16', 'API') === null
        ? null
        : perSale('lockfree N=16', 'API')! + (perSale('lockfree N=16', 'worker') ?? 0),
    redisUsPerSale: perSale('lockfree N=16', 'Redis'),
    productionApiUsPerSale:
      perSale('production', 'API') === null
        ? null
        : perSale('production', 'API')! + (perSale('production', 'worker') ?? 0),
    productionRedisUsPerSale: perSale('production', 'Redis'),
    productionRedisCommandsPerSale: (() => {
      const v = by('production')?.['redis cmd/sale'];
      return typeof v === 'number' ? v : null;
    })(),
  };
  // 1M requests/s of which 99 % are refusals, and the production shape: each tier's instances
  // from this run's costs; a model whose scenarios did not run is null ("not run")
  const modelled = runCapacity(new Map(results.map((r) => [String(r.scenario), r])));
  const capacity = {
    ...(modelled.crowd ?? { rows: null, bottleneck: null }),
    production: modelled.production,
  };
  const healthz = {
    p99MsUnderLoad: healthzMs.length ? Math.round(percentile(healthzMs, 99) * 10) / 10 : null,
    p50MsUnderLoad: healthzMs.length ? Math.round(percentile(healthzMs, 50) * 10) / 10 : null,
    samples: healthzMs.length,
    connections: 400,
  };
  const figures = {
    bench: 'http',
    loadDriver: driver,
    machine: machine(),
    durationS: duration,
    rounds,
    connections,
    redisDelayMsEachWay: delayMs,
    results,
    ratios,
    heldLock: {
      ...HELD_WAITS,
      arithmetic: held,
      restocksPerS,
      restockHolds: Object.fromEntries(restockHolds),
    },
    cpu,
    healthz,
    capacity,
    checks,
    violations,
  };
  /** a CPU figure as the text shows it: "not run" when its scenario did not run */
  const cpuText = (v: number | null) => (v === null ? NOT_RUN : `${v} us`);
  const text = [
    `\nHTTP benchmark: ${driver}, ${connections} connections, ${rounds} interleaved rounds of ${duration} s per scenario, one API process + one worker` +
      (delayMs ? `, Redis behind a +${delayMs} ms/way delay proxy` : '') +
      '\n',
    table(results),
    '',
    table(ratioRows(ratios)),
    '',
    `API CPU per refusal: ${cpuText(cpu.apiUsPerRefusal)} (no fast path: ${cpuText(cpu.apiUsPerRefusalNoFastPath)}; raw node:http: ${cpuText(cpu.apiUsPerRawHttp)}); ` +
      `per accepted sale (API + worker): ${cpuText(cpu.apiUsPerSale)}; Redis per sale: ${cpuText(cpu.redisUsPerSale)}`,
    ...held.map(
      (h) =>
        `held lock${h.delayMs ? ` at +${h.delayMs} ms` : ''}: global sells one sale per 4 round trips of ${h.roundTripUs} us; ` +
        `N=16's CPU: held-lock server ${heldRow(heldName(16, h.delayMs)).serverUs} us a sale (one core: ${h.serverCeiling}/s), ` +
        `all tiers ${heldRow(heldName(16, h.delayMs)).allUs} us (${machine().cpus} cores: ${h.machineCeiling}/s; ${h.coresBusy} cores were busy): ` +
        `N=16 could sell at most ${h.maxRatio}x global`,
    ),
    `CORS: API CPU per sold-out refusal ${cpuText(cpu.apiUsPerCorsRefusal)} (without: ${cpuText(cpu.apiUsPerRefusal)}), per preflight ${cpuText(cpu.apiUsPerPreflight)}`,
    `production shape per accepted sale: API + worker ${cpuText(cpu.productionApiUsPerSale)}, Redis ${cpuText(cpu.productionRedisUsPerSale)}, ` +
      `${cpu.productionRedisCommandsPerSale ?? NOT_RUN} Redis commands (target <= 15)`,
    healthz.samples
      ? `/healthz under 400 purchasing connections: p50 ${healthz.p50MsUnderLoad} ms, p99 ${healthz.p99MsUnderLoad} ms (${healthz.samples} probes)`
      : `/healthz under 400 purchasing connections: ${NOT_RUN} (needs "lockfree N=16")`,
    '',
    ...capacityText(modelled, table),
    '',
    'invariants:',
    ...checks.map((c) => `  ${c}`),
    '',
  ].join('\n');
  process.stdout.write(`${text}\n`);
  if (!values['no-write']) {
    const dir = values['update-report']
      ? join(ROOT, 'load-tests', 'results')
      : join(ROOT, 'load-tests', 'results', 'raw', run);
    if (values.rtt) writeRttReport(dir, figures);
    else writeReport(dir, figures, text);
    progress(`report written to ${dir}`);
    const quoted = [
      'heldSegmented16VsHeldGlobal',
      'heldSegmented16VsHeldGlobalAt1ms',
      'segmented16VsGlobal',
      'globalVsHeldGlobal',
      'restocksSegmented16VsGlobal',
      'restocksGlobalVsGlobal',
    ] as const;
    const missing = quoted.filter((name) => ratios[name] === null);
    if (values['update-report'] && !values.rtt && missing.length > 0) {
      progress(`"why segments" left as it was: ${missing.join(', ')} not run`);
    } else if (values['update-report'] && !values.rtt) {
      const m = machine();
      const quote = (name: (typeof quoted)[number]) => ratios[name]!;
      await updateWhySegments({
        bench: {
          date: new Date().toISOString().slice(0, 10),
          load1: m.load1,
          heldSegmented16VsHeldGlobal: quote('heldSegmented16VsHeldGlobal'),
          heldSegmented16VsHeldGlobalAt1ms: quote('heldSegmented16VsHeldGlobalAt1ms'),
          segmented16VsGlobal: quote('segmented16VsGlobal'),
          globalVsHeldGlobal: quote('globalVsHeldGlobal'),
          restocksSegmented16VsGlobal: quote('restocksSegmented16VsGlobal'),
          restocksGlobalVsGlobal: quote('restocksGlobalVsGlobal'),
          restocksPerS,
          arithmetic: held.map((h) => ({
            delayMs: h.delayMs,
            roundTripUs: h.roundTripUs,
            serverCeiling: h.serverCeiling,
            maxRatio: h.maxRatio,
          })),
        },
      });
    }
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  if (violations > 0) process.exitCode = 1;
}

/** The receiver's figures of every round (it is reset before each), with the orders they owe. */
function addHookStats(
  into: (ReceiverStats & { orders: number }) | undefined,
  round: ReceiverStats,
  orders: number,
): ReceiverStats & { orders: number } {
  if (!into) return { ...round, lagsMs: [...round.lagsMs], orders };
  return {
    received: into.received + round.received,
    acked: into.acked + round.acked,
    failed: into.failed + round.failed,
    unsigned: into.unsigned + round.unsigned,
    first: Math.min(into.first, round.first),
    last: Math.max(into.last, round.last),
    lagsMs: [...into.lagsMs, ...round.lagsMs],
    orders: into.orders + orders,
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
