/**
 * `npm run bench:payments`: a flash sale where buyers must pay within a window and a share of
 * them never do, in one run on the same servers (checkout, order worker, expiry jobs, sweep):
 *   - final:   a sellout of N units without a payment window (the baseline);
 *   - window:  the same sellout with a payment window (the deduct's extra field, expiry jobs);
 *   - resale:  demand goes on after the window sellout: payers start a payment (its intent) and
 *              the provider settles it at once (as its verified webhook would: Payments.settle),
 *              never-payers let the window run out; units come back and sell again until every
 *              unit is paid.
 * Reports purchases/s of both sellouts (ratio window/final), how late expiries return units
 * (restocked_at - pay_by), how long a returned unit waits for its next buyer, and checks the end
 * state: paid units == N, nothing awaiting, reconciliation clean. A table, then one JSON line.
 *
 * Options: --units 2000 --window 2 --never-pay 0.3 --clients 64 --redis-url --database-url
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { createCore, type Core } from '../../src/composition/core.js';
import { apiServices, startOrderQueue, startOrderWorker } from '../../src/composition/roles.js';
import { createLogger } from '../../src/log.js';
import { reconcile } from '../../src/orders/index.js';
import type { Services } from '../../src/services/index.js';
import { machine, percentile, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const SEGMENTS = 16;
const round = (x: number, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Deterministic: whether this buyer is one who never pays. */
const neverPays = (i: number, share: number) => ((i * 2_654_435_761) >>> 0) / 2 ** 32 < share;

type Sellout = {
  scenario: string;
  units: number;
  seconds: number;
  purchasesPerSec: number;
  refusals: number;
};

/**
 * `clients` concurrent buyers, each a new shopper per attempt, until `done()`; an accepted
 * purchase goes to `onSale`. Refusals (sold out for now) back off 5 ms.
 */
async function crowd(
  services: Services,
  productId: string,
  clients: number,
  done: () => boolean,
  onSale: (orderId: string, buyer: number) => Promise<void> | void,
): Promise<{ sales: number; refusals: number }> {
  let next = 0;
  let sales = 0;
  let refusals = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!done()) {
        const buyer = next++;
        const r = await services.checkout.buy({ productId, userId: `b${buyer}`, quantity: 1 });
        if (r.kind === 'sold') {
          sales++;
          await onSale(r.order.orderId, buyer);
        } else if (r.kind === 'refused') {
          refusals++;
          await new Promise((resolve) => setTimeout(resolve, 5));
        } else {
          throw r.kind === 'failed' ? r.cause : new Error(`a purchase ended ${r.kind}`);
        }
      }
    }),
  );
  return { sales, refusals };
}

async function seed(rt: Core, units: number, window?: number): Promise<string> {
  const productId = `pay${randomBytes(3).toString('hex')}`;
  await rt.products.seed(productId, {
    total: units,
    segments: SEGMENTS,
    strategy: 'segmented',
    payWithinSeconds: window,
  });
  return productId;
}

async function sellout(
  rt: Core,
  services: Services,
  scenario: string,
  units: number,
  clients: number,
  window?: number,
): Promise<Sellout> {
  const productId = await seed(rt, units, window);
  let sold = 0;
  const t0 = performance.now();
  const r = await crowd(
    services,
    productId,
    clients,
    () => sold >= units,
    () => {
      sold++;
    },
  );
  const seconds = (performance.now() - t0) / 1000;
  return {
    scenario,
    units,
    seconds: round(seconds, 2),
    purchasesPerSec: Math.round(units / seconds),
    refusals: r.refusals,
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      units: { type: 'string', default: '2000' },
      sellout: { type: 'string', default: '10000' },
      rounds: { type: 'string', default: '3' },
      window: { type: 'string', default: '2' },
      'never-pay': { type: 'string', default: '0.3' },
      clients: { type: 'string', default: '64' },
      'redis-url': { type: 'string' },
      'database-url': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const units = Number(values.units);
  const window = Number(values.window);
  const share = Number(values['never-pay']);
  const clients = Number(values.clients);
  const sellUnits = Number(values.sellout);
  const rounds = Number(values.rounds);
  const stack = await benchStack({
    redisUrl: values['redis-url'],
    databaseUrl: values['database-url'],
  });
  const id = randomBytes(3).toString('hex');
  const config = loadConfig({
    ...process.env,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `bench${id}`,
    QUEUE_PREFIX: `{bench${id}}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
  });
  const rt = createCore(config, createLogger(config));
  try {
    const queue = startOrderQueue(rt);
    await startOrderWorker(rt, queue);
    const services = apiServices(rt, queue);

    // the cost of the window: sellouts of `sellout` units with and without one, alternated
    // `rounds` times (nobody pays here); each variant's best run counts
    const runs: Sellout[] = [];
    for (let i = 0; i < rounds; i++) {
      progress(`round ${i + 1}/${rounds}: a ${sellUnits}-unit sellout without, then with a window`);
      runs.push(await sellout(rt, services, 'final', sellUnits, clients));
      runs.push(await sellout(rt, services, 'window (600 s)', sellUnits, clients, 600));
    }
    const best = (name: string) =>
      runs
        .filter((r) => r.scenario === name)
        .reduce((a, b) => (b.purchasesPerSec > a.purchasesPerSec ? b : a));
    const final = best('final');
    const windowed = best('window (600 s)');

    progress(
      `resale: ${units} units, ${window} s to pay, ${share * 100} % never pay; buyers keep ` +
        'coming until every unit is paid',
    );
    const productId = await seed(rt, units, window);
    let paid = 0;
    const payOutcomes: Record<string, number> = {};
    const saleTimes: number[] = [];
    const count = (outcome: string) => (payOutcomes[outcome] = (payOutcomes[outcome] ?? 0) + 1);
    // a payer starts the payment (its intent), then the provider's verified notice settles it
    const payOrder = async (orderId: string, buyer: number) => {
      saleTimes.push(Date.now());
      if (neverPays(buyer, share)) return;
      let started;
      for (;;) {
        started = await services.payments.start(orderId, `b${buyer}`);
        if (started.code !== 'settling') break;
        await new Promise((res) => setTimeout(res, 5));
      }
      if (started.code !== 'started') {
        return void count(started.code === 'conflict' ? `start:${started.state}` : started.code);
      }
      const r = await services.payments.settle({
        orderId,
        intentId: started.intent.paymentIntentId,
        paymentId: `psp-${orderId}`,
      });
      count(r.code === 'conflict' ? `conflict:${r.state}` : r.code);
      if (r.code === 'ok') paid++;
    };
    const t0 = performance.now();
    const resale = await crowd(services, productId, clients, () => paid >= units, payOrder);
    const resaleSeconds = (performance.now() - t0) / 1000;

    // wait for every never-payer's order to expire and its units to come back
    const deadline = Date.now() + 60_000 + window * 1_000;
    for (;;) {
      const r = await sql<{ n: string }>`select count(*) as n from orders
        where product_id = ${productId} and (status = 'awaiting_payment'
          or (status = 'expired' and restocked_at is null))`.execute(rt.db);
      if (Number(r.rows[0]!.n) === 0) break;
      if (Date.now() > deadline) throw new Error(`${r.rows[0]!.n} orders still open`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const rows = await rt.db
      .selectFrom('orders')
      .select(['status', 'quantity', 'pay_by', 'restocked_at'])
      .where('product_id', '=', productId)
      .execute();
    const expired = rows.filter((r) => r.status === 'expired');
    const paidUnits = rows.filter((r) => r.status === 'paid').reduce((a, r) => a + r.quantity, 0);
    const lateness = expired
      .map((r) => r.restocked_at!.getTime() - r.pay_by!.getTime())
      .sort((a, b) => a - b);
    // a returned unit's wait for its next buyer: from its return to the next sale after it
    saleTimes.sort((a, b) => a - b);
    const waits: number[] = [];
    for (const r of expired) {
      const back = r.restocked_at!.getTime();
      const next = saleTimes.find((t) => t >= back);
      if (next !== undefined) waits.push(next - back);
    }
    waits.sort((a, b) => a - b);
    const report = (await reconcile({ store: rt.orderStore, rows: rt.orderRows }, productId))!;

    const figures = {
      bench: 'payments',
      machine: machine(),
      units,
      windowSeconds: window,
      neverPayShare: share,
      clients,
      sellouts: runs,
      ratios: { windowVsFinal: ratio(windowed.purchasesPerSec, final.purchasesPerSec) },
      resale: {
        seconds: round(resaleSeconds, 2),
        payOutcomes,
        sales: resale.sales,
        orders: rows.length,
        paidUnits,
        expiredOrders: expired.length,
        returnedUnits: report.returned,
        expiryLatenessMs: {
          p50: percentile(lateness, 50),
          p95: percentile(lateness, 95),
          max: lateness.at(-1) ?? 0,
        },
        resaleWaitMs: {
          resold: waits.length,
          p50: percentile(waits, 50),
          p95: percentile(waits, 95),
          max: waits.at(-1) ?? 0,
        },
      },
      checks: {
        paidEqualsStock: paidUnits === units,
        returnedEqualsExpired: report.returned === expired.length,
        reconciled: report.ok,
        problems: report.problems,
      },
    };
    const r = figures.resale;
    const text = [
      `Payment windows: ${units} units, ${window} s to pay, ${share * 100} % of buyers never pay`,
      '',
      table(figures.sellouts),
      '',
      `window / final purchases per second (best of ${rounds} each): ${figures.ratios.windowVsFinal}x`,
      '',
      table([
        { figure: 'orders placed in all', value: r.orders },
        { figure: 'paid units (== stock?)', value: `${paidUnits} (${paidUnits === units})` },
        {
          figure: 'expired orders / units returned',
          value: `${r.expiredOrders} / ${r.returnedUnits}`,
        },
        { figure: 'resale until all paid (s)', value: r.seconds },
        { figure: 'expiry lateness p50 / p95 / max (ms)', value: fmt(r.expiryLatenessMs) },
        {
          figure: 'returned unit waits for a buyer p50 / p95 / max (ms)',
          value: fmt(r.resaleWaitMs),
        },
        { figure: 'reconciliation', value: figures.checks.reconciled ? 'clean' : 'PROBLEMS' },
      ]),
      '',
      JSON.stringify(figures),
    ].join('\n');
    process.stdout.write(`\n${text}\n`);
    if (!values['no-write']) saveRun('payments', text, values['update-report']);
    if (!figures.checks.paidEqualsStock || !figures.checks.reconciled) process.exitCode = 1;
  } finally {
    await rt.lifecycle.close();
    await stack.stop();
  }
}

const fmt = (p: { p50: number; p95: number; max: number }) => `${p.p50} / ${p.p95} / ${p.max}`;

main().catch((err: unknown) => {
  process.stderr.write(
    `bench:payments failed: ${err instanceof Error ? err.stack : String(err)}\n`,
  );
  process.exit(1);
});
