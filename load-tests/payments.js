// k6 flash sale with a payment window: shoppers buy, most start paying at once
// (POST /orders/:id/pay answers their payment intent) and the payment provider, played here,
// settles each intent with a Standard Webhooks-signed POST /payments/webhook; NEVER_PAY of them
// never do. Their units come back when the window ends and sell again to the shoppers still
// arriving.
//   k6 run -e ADMIN_TOKEN=... -e WEBHOOK_SECRET=... -e STOCK=100 -e WINDOW_S=2 -e NEVER_PAY=0.3 \
//     -e RATE=50 -e DURATION=20s load-tests/payments.js
// teardown() waits until no order awaits payment or a return, then checks: reconciliation clean,
// nothing oversold, and every unit paid (the run must last several windows past the sellout).
import { check, sleep } from 'k6';
import crypto from 'k6/crypto';
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
/** the server's PAYMENT_WEBHOOK_SECRET (the provider's signing key) */
const WEBHOOK_SECRET = __ENV.WEBHOOK_SECRET || '';

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
const STARTED = http.expectedStatuses(201, 409, 503);

export function setup() {
  if (!WEBHOOK_SECRET)
    throw new Error("set -e WEBHOOK_SECRET= (the server's PAYMENT_WEBHOOK_SECRET)");
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
  // 503 order-settling: a spill purchase is still taking its units (a moment)
  const start = () =>
    http.post(`${env.BASE_URL}/orders/${orderId}/pay`, null, {
      headers: { 'x-user-id': shopperId() },
      tags: { name: 'pay' },
      responseCallback: STARTED,
    });
  let started = start();
  for (let i = 0; i < 50 && started.status === 503; i++) {
    sleep(0.05);
    started = start();
  }
  if (started.status === 409) return void metrics.payTooLate.add(1);
  if (started.status !== 201) return void metrics.errors.add(1);
  const intent = /** @type {{ paymentIntentId: string }} */ (started.json()).paymentIntentId;
  const settled = providerSettles(orderId, intent);
  payLatency.add(started.timings.duration + settled.timings.duration);
  if (settled.status === 200) metrics.paid.add(1);
  else if (settled.status === 409) metrics.payTooLate.add(1);
  else metrics.errors.add(1);
}

/**
 * The payment provider's notice that the intent was paid, signed as Standard Webhooks do
 * (base64 HMAC-SHA256 of "<webhook-id>.<timestamp>.<body>", keyed with the secret's bytes).
 * @param {string} orderId
 * @param {string} intentId
 */
function providerSettles(orderId, intentId) {
  const body = JSON.stringify({
    type: 'payment.succeeded',
    orderId,
    paymentIntentId: intentId,
    paymentId: `k6-${orderId}`,
  });
  const id = `msg_${orderId}`;
  const t = Math.floor(Date.now() / 1000);
  const signature = crypto.hmac('sha256', WEBHOOK_SECRET, `${id}.${t}.${body}`, 'base64');
  return http.post(`${env.BASE_URL}/payments/webhook`, body, {
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(t),
      'webhook-signature': `v1,${signature}`,
    },
    tags: { name: 'webhook' },
    responseCallback: PAID,
  });
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
