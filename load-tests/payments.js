// k6 flash sale with a payment window: shoppers buy, most pay at once through
// POST /orders/:id/pay, NEVER_PAY of them never do. Their units come back when the window ends
// and sell again to the shoppers still arriving.
//   k6 run -e ADMIN_TOKEN=... -e STOCK=100 -e WINDOW_S=2 -e NEVER_PAY=0.3 \
//     -e RATE=50 -e DURATION=20s load-tests/payments.js
// teardown() waits until no order awaits payment or a return, then checks: reconciliation clean,
// nothing oversold, and every unit paid (the run must last several windows past the sellout).
import { check, sleep } from 'k6';
import http from 'k6/http';
import { Trend } from 'k6/metrics';
import {
  arrivalScenario,
  buy,
  env,
  metrics,
  seed,
  shopperId,
  summary,
  thresholds,
  verify,
} from './lib/sale.js';

const WINDOW_S = Number(__ENV.WINDOW_S || 2);
const NEVER_PAY = Number(__ENV.NEVER_PAY || 0.3);
/** How long teardown waits for the last windows to close and their units to come back. */
const SETTLE_S = Number(__ENV.SETTLE_S || 30);

/** time from a purchase to its payment's answer */
const payLatency = new Trend('seckill_pay_duration', true);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: { sale: arrivalScenario() },
  thresholds: {
    ...thresholds,
    seckill_paid: [`count==${env.STOCK}`],
  },
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S + SETTLE_S + 30}s`,
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max'],
};

const PAID = http.expectedStatuses(200, 409);

export function setup() {
  const productId = __ENV.PRODUCT_ID || `k6-pay-${Date.now()}`;
  seed(productId, {
    strategy: env.STRATEGY,
    segments: env.SEGMENTS,
    total: env.STOCK,
    payWithinSeconds: WINDOW_S,
  });
  return { productId };
}

/** @param {{ productId: string }} data */
export default function (data) {
  const res = buy(data.productId);
  if (res.status !== 202 || Math.random() < NEVER_PAY) return;
  const orderId = /** @type {{ orderId: string }} */ (res.json()).orderId;
  const pay = http.post(
    `${env.BASE_URL}/orders/${orderId}/pay`,
    JSON.stringify({ paymentId: `k6-${orderId}` }),
    {
      headers: { 'content-type': 'application/json', 'x-user-id': shopperId() },
      tags: { name: 'pay' },
      responseCallback: PAID,
    },
  );
  payLatency.add(pay.timings.duration);
  if (pay.status === 200) metrics.paid.add(1);
  else if (pay.status === 409) metrics.payTooLate.add(1);
  else metrics.errors.add(1);
}

/** @param {{ productId: string }} data */
export function teardown(data) {
  // the last unpaid orders expire (their units come back) after the load ends
  const deadline = Date.now() + (WINDOW_S + SETTLE_S) * 1000;
  /** @type {import('./lib/sale.js').Reconcile | undefined} */
  let report;
  for (;;) {
    report = verify(data.productId);
    const open = report ? report.held.awaitingPayment + report.held.returning : 1;
    if (open === 0 || Date.now() > deadline) break;
    sleep(1);
  }
  const ok = check(report, {
    'no order awaits payment or a return': (r) =>
      r !== undefined && r.held.awaitingPayment === 0 && r.held.returning === 0,
    'every unit paid': (r) => r !== undefined && r.held.paid === r.total,
  });
  if (!ok) {
    metrics.invariantViolations.add(1);
    console.error(`payment invariants of ${data.productId}: ${JSON.stringify(report)}`);
  }
}

/** @param {Record<string, any>} data */
export function handleSummary(data) {
  const count = (/** @type {string} */ k) => (data.metrics[k] && data.metrics[k].values.count) || 0;
  return summary(data, 'payments', [
    `paid ${count('seckill_paid')} of ${env.STOCK} units; ${count('seckill_pay_too_late')} pays ` +
      `came after their window; ${count('seckill_accepted') - env.STOCK} sales were of returned units`,
  ]);
}
