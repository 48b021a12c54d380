/**
 * `npm run bench:events`: order events delivered to a local receiver (webhook-receiver.mjs,
 * verifying every signature) by one worker process, while one API process sells as fast as wrk
 * drives it: events delivered per second (the sale's events over the time from its start to the
 * last acknowledgment) and the delivery lag (the event's commit to its receiver's 2xx) p50 / p99,
 * with the receiver answering 200, and answering 500 to 10 % of the deliveries (each retried
 * 5 s +-20 % later, the default schedule's first delay; the later delays are 5 s too, not the
 * default's 5 min and more, so the one event in a hundred that fails twice does not hold the run
 * for minutes).
 *
 * Then endpoint isolation: a burst of --burst orders (wrk stops after that many sales) to the
 * same receiver alone, beside a second endpoint registered for that round whose receiver answers
 * too (what a second endpoint costs), and beside one whose receiver never answers (each attempt
 * holds its request for WEBHOOK_TIMEOUT_MS, 10 s): the healthy receiver's lag p50 / p99 in each,
 * and the ratios (beside a hanging one / alone, and / beside a healthy one; 1 is full isolation).
 * Interleaved rounds, every mode in each; prints a table and ends with one JSON line.
 *
 * Options: --duration 10 (s of sale per mode per round) --rounds 2 --connections 50 --burst 300
 *          --no-build --redis-url --database-url (else throwaway servers)
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../../src/launcher/process.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { load, pickDriver } from './http-load.js';
import { child, ROOT, stopAll, until } from './processes.js';
import { machine, percentile, progress, table } from './report.js';
import { benchStack } from './stack.js';
import { startWebhookPair } from './webhook-pair.js';

const MODES = [
  { name: 'receiver answers 200', failRate: 0 },
  { name: 'receiver answers 500 to 10 %', failRate: 0.1 },
] as const;

const ISOLATION = [
  { name: 'healthy receiver alone', beside: undefined },
  { name: 'healthy receiver beside a second healthy one', beside: 'healthy' },
  { name: 'healthy receiver beside a hanging one', beside: 'hanging' },
] as const;

/** The sender's default deadline: a hanging receiver holds each attempt this long. */
const WEBHOOK_TIMEOUT_MS = 10_000;

/** The default's first delay, then the same again (see above). */
const RETRY_SCHEDULE = '5s,5s,5s,5s,5s,5s,5s';

interface Totals {
  orders: number;
  sold: number;
  saleSeconds: number;
  /** s from each sale's start to its last event's acknowledgment */
  deliverySeconds: number;
  failed: number;
  lagsMs: number[];
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '50' },
      burst: { type: 'string', default: '300' },
      'no-build': { type: 'boolean', default: false },
      'redis-url': { type: 'string' },
      'database-url': { type: 'string' },
    },
  });
  const duration = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const burst = Number(values.burst);
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({
    redisUrl: values['redis-url'],
    databaseUrl: values['database-url'],
  });
  const run = Date.now().toString(36);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    WORKER_PORT: '0',
    REDIS_URL: stack.redisUrl,
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'development',
    WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
  };
  const driver = pickDriver();
  const pair = await startWebhookPair({ databaseUrl: stack.databaseUrl, env, run, verify: true });
  const others = { healthy: await freePort(), hanging: await freePort() };
  const otherReceivers = Object.entries(others).map(([kind, port]) =>
    child(
      [
        join(ROOT, 'load-tests', 'bench', 'webhook-receiver.mjs'),
        String(port),
        ...(kind === 'hanging' ? ['--hang'] : []),
      ],
      env,
      `${kind} receiver`,
    ),
  );
  const otherBase = (kind: keyof typeof others) => `http://127.0.0.1:${others[kind]}`;
  for (const kind of ['healthy', 'hanging'] as const) {
    await until(
      `the ${kind} receiver`,
      async () => (await fetch(`${otherBase(kind)}/stats`)).ok,
      30_000,
    );
  }
  const isolated = new Map(
    ISOLATION.map((m) => [m.name, { orders: 0, seconds: 0, lagsMs: [] as number[], hung: 0 }]),
  );
  const totals = new Map<string, Totals>(
    MODES.map((m) => [
      m.name,
      { orders: 0, sold: 0, saleSeconds: 0, deliverySeconds: 0, failed: 0, lagsMs: [] },
    ]),
  );
  const checks: string[] = [];
  let violations = 0;
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const mode of MODES) {
        const productId = `events-${mode.failRate * 100}-${round}-${run}`;
        const seeded = await admin(pair.base, 'PUT', `/admin/products/${productId}`, {
          total: 10_000_000,
          strategy: 'segmented',
          segments: 16,
        });
        if (!seeded.ok) throw new Error(`seeding ${productId}: ${seeded.status}`);
        await pair.reset(mode.failRate);
        progress(
          `round ${round}/${rounds}, ${mode.name}: ${connections} connections for ${duration} s`,
        );
        const started = Date.now();
        const l = await load(driver, pair.base, '/seckill', productId, `${productId}-r`, {
          duration,
          connections,
        });
        const r = await persistedAndReconciled(pair.base, productId);
        progress(`${r.persistedOrders} orders persisted: waiting for their events at the receiver`);
        const stats = await pair.delivered(r.persistedOrders, 600_000);
        const t = totals.get(mode.name)!;
        t.orders += r.persistedOrders;
        t.sold += l.status['202'] ?? 0;
        t.saleSeconds += l.seconds;
        t.deliverySeconds += (stats.last - started) / 1_000;
        t.failed += stats.failed;
        t.lagsMs.push(...stats.lagsMs);
        const good = r.ok && stats.acked === r.persistedOrders && stats.unsigned === 0;
        checks.push(
          `${mode.name}, round ${round}: ${good ? 'OK' : 'VIOLATED'}: ${stats.acked} events acknowledged, signed, for ${r.persistedOrders} orders (reconciliation ${r.ok ? 'clean' : r.problems.join('; ')}); ${stats.failed} answered 500 and retried`,
        );
        if (!good) violations++;
      }
      for (const mode of ISOLATION) {
        const productId = `isolation-${mode.beside ?? 'alone'}-${round}-${run}`;
        const seeded = await admin(pair.base, 'PUT', `/admin/products/${productId}`, {
          total: burst,
          strategy: 'segmented',
          segments: 16,
        });
        if (!seeded.ok) throw new Error(`seeding ${productId}: ${seeded.status}`);
        await pair.reset(0);
        // a fresh endpoint each round, so its backlog is this round's events only
        const other = mode.beside
          ? await registered(pair.base, `${otherBase(mode.beside)}/hooks`)
          : undefined;
        progress(`round ${round}/${rounds}, ${mode.name}: a burst of ${burst} orders`);
        const started = Date.now();
        await load(driver, pair.base, '/seckill', productId, `${productId}-r`, {
          duration: 30,
          connections,
          ...(driver === 'wrk' && { scriptArgs: ['seckill', String(burst)] }),
        });
        const r = await persistedAndReconciled(pair.base, productId);
        const stats = await pair.delivered(r.persistedOrders, 600_000);
        const t = isolated.get(mode.name)!;
        t.orders += r.persistedOrders;
        t.seconds += (stats.last - started) / 1_000;
        t.lagsMs.push(...stats.lagsMs);
        if (other) await admin(pair.base, 'POST', `/admin/webhook-endpoints/${other}/disable`);
        if (mode.beside === 'hanging') {
          const hung = (await (await fetch(`${otherBase('hanging')}/stats`)).json()) as {
            hung: number;
          };
          t.hung = hung.hung;
          // its attempts in flight end by the sender's deadline: the next round starts after
          progress('the hanging endpoint disabled: waiting out its attempts in flight');
          await new Promise((resolve) => setTimeout(resolve, WEBHOOK_TIMEOUT_MS + 1_000));
        }
        const good = r.ok && stats.acked === r.persistedOrders && stats.unsigned === 0;
        checks.push(
          `${mode.name}, round ${round}: ${good ? 'OK' : 'VIOLATED'}: ${stats.acked} events acknowledged by the healthy receiver for ${r.persistedOrders} orders`,
        );
        if (!good) violations++;
      }
    }
  } finally {
    await stopAll(otherReceivers);
    await pair.stop();
    await stack.stop();
  }
  const rows = MODES.map((m) => {
    const t = totals.get(m.name)!;
    const lags = t.lagsMs.sort((a, b) => a - b);
    return {
      receiver: m.name,
      'sales/s': Math.round(t.sold / t.saleSeconds),
      events: t.orders,
      'delivered/s': Math.round(t.orders / t.deliverySeconds),
      'lag p50 ms': percentile(lags, 50),
      'lag p99 ms': percentile(lags, 99),
      '500s retried': t.failed,
    };
  });
  const isolationRows = ISOLATION.map((mode) => {
    const t = isolated.get(mode.name)!;
    const lags = t.lagsMs.sort((a, b) => a - b);
    return {
      receiver: mode.name,
      events: t.orders,
      'delivered/s': Math.round(t.orders / t.seconds),
      'lag p50 ms': percentile(lags, 50),
      'lag p99 ms': percentile(lags, 99),
      'hanging attempts': t.hung,
    };
  });
  type Row = (typeof isolationRows)[number];
  const [alone, besideHealthy, beside] = isolationRows as [Row, Row, Row];
  const ratio = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 100) / 100;
  const isolation = {
    lagP50BesideVsAlone: ratio(beside['lag p50 ms'], alone['lag p50 ms']),
    lagP99BesideVsAlone: ratio(beside['lag p99 ms'], alone['lag p99 ms']),
    lagP50HangingVsHealthyBeside: ratio(beside['lag p50 ms'], besideHealthy['lag p50 ms']),
    lagP99HangingVsHealthyBeside: ratio(beside['lag p99 ms'], besideHealthy['lag p99 ms']),
  };
  const m = machine();
  process.stdout.write(
    [
      `\norder events to a local receiver: ${driver}, ${connections} connections, ${rounds} interleaved rounds of ${duration} s per mode, ` +
        `one API + one worker process (WEBHOOK_CONCURRENCY 16, retries ${RETRY_SCHEDULE}), ${m.cpus} cores, load ${m.load1}`,
      table(rows),
      '',
      `endpoint isolation: bursts of ${burst} orders, the healthy receiver's lag alone and beside an endpoint whose receiver never answers (WEBHOOK_TIMEOUT_MS ${WEBHOOK_TIMEOUT_MS})`,
      table(isolationRows),
      `beside a hanging one / alone: lag p50 ${isolation.lagP50BesideVsAlone}, p99 ${isolation.lagP99BesideVsAlone}; / beside a healthy one: p50 ${isolation.lagP50HangingVsHealthyBeside}, p99 ${isolation.lagP99HangingVsHealthyBeside} (1: a hanging endpoint costs the healthy one nothing)`,
      '',
      'invariants:',
      ...checks.map((c) => `  ${c}`),
      '',
    ].join('\n') + '\n',
  );
  process.stdout.write(
    `${JSON.stringify({ bench: 'events', duration, rounds, connections, burst, machine: m, results: rows, isolationResults: isolationRows, isolation, checks, violations })}\n`,
  );
  if (violations > 0) process.exitCode = 1;
}

/** Registers a receiver for every event type: its endpoint's id. */
async function registered(base: string, url: string): Promise<string> {
  const r = await admin(base, 'POST', '/admin/webhook-endpoints', { url, events: ['*'] });
  if (r.status !== 201) throw new Error(`registering ${url}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { id: string }).id;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:events failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
