// Shared parts of the k6 flash-sale scenarios: environment, seeding through the admin API,
// one purchase with its outcome counted, and the invariant check after a run.
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter } from 'k6/metrics';

/** Every knob comes from the environment (k6 run -e NAME=value, or the shell). */
export const env = {
  BASE_URL: __ENV.BASE_URL || 'http://127.0.0.1:3000',
  ADMIN_TOKEN: __ENV.ADMIN_TOKEN || '',
  STRATEGY: __ENV.STRATEGY || 'segmented',
  SEGMENTS: Number(__ENV.SEGMENTS || 16),
  STOCK: Number(__ENV.STOCK || 1000),
  RATE: Number(__ENV.RATE || 2000),
  VUS: Number(__ENV.VUS || 100),
  DURATION: __ENV.DURATION || '20s',
  RESULTS_DIR: __ENV.RESULTS_DIR || 'load-tests/results',
  /** How long teardown waits for the order workers to persist every sale. */
  PERSIST_TIMEOUT_S: Number(__ENV.PERSIST_TIMEOUT_S || 120),
  /** Latency thresholds of the purchase requests, ms. */
  P95_MS: Number(__ENV.P95_MS || 500),
  P99_MS: Number(__ENV.P99_MS || 1000),
};

/**
 * The open-model executor both scripts use: env.RATE purchases a second for env.DURATION, with
 * enough VUs on hand that arrivals are not dropped while the server is slow.
 * @param {Partial<import('k6/options').Scenario>} [extra] - fields to add (startTime, tags, ...)
 * @returns {import('k6/options').Scenario}
 */
export function arrivalScenario(extra = {}) {
  return /** @type {import('k6/options').Scenario} */ ({
    executor: 'constant-arrival-rate',
    rate: env.RATE,
    timeUnit: '1s',
    duration: env.DURATION,
    preAllocatedVUs: Math.min(env.VUS, 1000),
    maxVUs: Math.max(env.VUS, 1000),
    ...extra,
  });
}

export const metrics = {
  accepted: new Counter('seckill_accepted'),
  /** orders paid (payment-window sales) */
  paid: new Counter('seckill_paid'),
  /** pays refused because the window had closed (the unit went back on sale) */
  payTooLate: new Counter('seckill_pay_too_late'),
  soldOut: new Counter('seckill_sold_out'),
  limitReached: new Counter('seckill_limit_reached'),
  /** 429: the stack's rate limits (RATE_LIMIT_IP / RATE_LIMIT_USER, as deploy/ runs it) */
  rateLimited: new Counter('seckill_rate_limited'),
  /** refused for a reason that is not an error: busy (503 + Retry-After), window, other 4xx */
  rejected: new Counter('seckill_rejected'),
  /** 5xx other than a 503 busy answer, network errors, unexpected bodies */
  errors: new Counter('seckill_errors'),
  invariantViolations: new Counter('seckill_invariant_violations'),
};

// What counts as a failed request is said per request (k6's http_req_failed): a purchase may be
// refused on purpose (409/410/425/429/503), an admin call must succeed. A global callback would
// count the seed's 201 and the reconcile's 200 as failures.
/**
 * Answers a flash sale gives on purpose: sold, refused (409 / 410 / 425), rate-limited (429: a
 * stack with RATE_LIMIT_IP, like deploy/'s, answers one client address this way past its rate),
 * busy (503).
 */
export const SHOP_ANSWERS = http.expectedStatuses(202, 409, 410, 425, 429, 503);
const SEEDED = http.expectedStatuses(200, 201);
const OK = http.expectedStatuses(200);

const adminHeaders = () => ({
  'content-type': 'application/json',
  authorization: `Bearer ${env.ADMIN_TOKEN}`,
});

/**
 * Seeds (or force-reseeds) a product through the admin API.
 * @param {string} productId
 * @param {{ strategy: string, segments: number, total: number, payWithinSeconds?: number }} spec
 * @param {string} [base] - the shop to seed it on (default BASE_URL)
 */
export function seed(productId, spec, base = env.BASE_URL) {
  const body = {
    total: spec.total,
    strategy: spec.strategy,
    ...(spec.strategy === 'global' ? {} : { segments: spec.segments }),
    ...(spec.payWithinSeconds ? { payWithinSeconds: spec.payWithinSeconds } : {}),
  };
  const res = http.put(`${base}/admin/products/${productId}?force=true`, JSON.stringify(body), {
    headers: adminHeaders(),
    tags: { name: 'seed' },
    responseCallback: SEEDED,
  });
  if (res.status !== 200 && res.status !== 201) {
    throw new Error(`seeding ${productId} failed: ${res.status} ${res.body}`);
  }
}

/** A shopper id no other iteration of this run uses. */
export function shopperId() {
  return `k6-${exec.scenario.name}-${exec.scenario.iterationInTest}`;
}

/**
 * One purchase; counts its outcome.
 * @param {string} productId
 * @param {Record<string, string>} [tags]
 * @param {string} [base] - the shop to buy from (default BASE_URL)
 */
export function buy(productId, tags = {}, base = env.BASE_URL) {
  const res = http.post(`${base}/seckill`, JSON.stringify({ productId }), {
    headers: { 'content-type': 'application/json', 'x-user-id': shopperId() },
    tags: { name: 'seckill', ...tags },
    responseCallback: SHOP_ANSWERS,
  });
  const type = res.status >= 400 ? problemType(res) : '';
  if (res.status === 202) metrics.accepted.add(1, tags);
  else if (type.endsWith(':sold-out')) metrics.soldOut.add(1, tags);
  else if (type.endsWith(':limit-reached')) metrics.limitReached.add(1, tags);
  else if (res.status === 429) metrics.rateLimited.add(1, tags);
  else if (res.status === 503 || (res.status >= 400 && res.status < 500))
    metrics.rejected.add(1, tags);
  else metrics.errors.add(1, tags);
  return res;
}

/** @param {import('k6/http').RefinedResponse<any>} res */
function problemType(res) {
  try {
    const body = /** @type {{ type?: string }} */ (res.json());
    return body.type || '';
  } catch {
    return '';
  }
}

/**
 * @typedef {{ ok: boolean, total: number, remaining: number, pending: number, persisted: number,
 *   returned: number, held: { final: number, awaitingPayment: number, paid: number,
 *   returning: number }, problems: string[] }} Reconcile
 */

/**
 * After the load: waits until the order workers persisted every sale, then reconciles. Counts an
 * invariant violation for an unclean reconciliation, oversell, or a sale that never persisted.
 * @param {string} productId
 * @param {string} [base] - the shop that sold it (default BASE_URL)
 * @returns {Reconcile | undefined}
 */
export function verify(productId, base = env.BASE_URL) {
  const deadline = Date.now() + env.PERSIST_TIMEOUT_S * 1000;
  /** @type {Reconcile | undefined} */
  let report;
  for (;;) {
    const res = http.post(`${base}/admin/products/${productId}/reconcile`, null, {
      headers: adminHeaders(),
      tags: { name: 'reconcile' },
      responseCallback: OK,
    });
    report = res.status === 200 ? /** @type {Reconcile} */ (res.json()) : undefined;
    if ((report && report.pending === 0) || Date.now() > deadline) break;
    sleep(1);
  }
  const ok = check(report, {
    'every sale persisted': (r) => r !== undefined && r.pending === 0,
    'reconciliation clean': (r) => r !== undefined && r.ok,
    // returned units were sold again: what is still sold never exceeds the stock
    'no oversell': (r) =>
      r !== undefined && r.remaining >= 0 && r.persisted - (r.returned || 0) <= r.total,
  });
  if (!ok) {
    metrics.invariantViolations.add(1, { product: productId });
    console.error(`invariants of ${productId} violated: ${JSON.stringify(report)}`);
  }
  return report;
}

/**
 * Thresholds every scenario shares: no unexpected status (admin calls included), no error, no
 * invariant violation, and purchase latency within P95_MS / P99_MS (defaults measured on a
 * 2-core machine that also runs the API, Redis, PostgreSQL and k6; see docs/benchmarks.md, "k6").
 */
export const thresholds = {
  seckill_errors: ['count==0'],
  seckill_invariant_violations: ['count==0'],
  http_req_failed: ['rate==0'],
  'http_req_duration{name:seckill}': [`p(95)<${env.P95_MS}`, `p(99)<${env.P99_MS}`],
};

/**
 * The run's summary as JSON in RESULTS_DIR, and a short text on stdout.
 * @param {Record<string, any>} data  k6's summary data
 * @param {string} name
 * @param {string[]} extraLines
 */
export function summary(data, name, extraLines = []) {
  const m = data.metrics;
  const count = (/** @type {string} */ k) => (m[k] && m[k].values.count) || 0;
  // purchases only: the admin calls (seed, reconcile polling) are not what the sale is judged by
  const shop = m['http_req_duration{name:seckill}'] || m.http_req_duration;
  const d = shop && shop.values;
  const lines = [
    `${name}: accepted ${count('seckill_accepted')}, sold out ${count('seckill_sold_out')}, ` +
      `limit ${count('seckill_limit_reached')}, rate-limited ${count('seckill_rate_limited')}, ` +
      `rejected ${count('seckill_rejected')}, ` +
      `errors ${count('seckill_errors')}, invariant violations ${count('seckill_invariant_violations')}`,
    d
      ? `purchase latency ms: p50 ${d.med.toFixed(2)}  p95 ${d['p(95)'].toFixed(2)}  p99 ${(d['p(99)'] || 0).toFixed(2)}`
      : '',
    ...extraLines,
    'thresholds:',
    // not the `>=0` ones: they only make k6 keep a sub-metric for the summary
    ...Object.entries(m).flatMap(([metric, v]) =>
      Object.entries(/** @type {Record<string, { ok: boolean }>} */ (v.thresholds || {}))
        .filter(([t]) => !t.endsWith('>=0'))
        .map(([t, r]) => `  ${r.ok ? 'ok    ' : 'FAILED'} ${metric}: ${t}`),
    ),
  ];
  return {
    stdout: `${lines.filter(Boolean).join('\n')}\n`,
    [`${env.RESULTS_DIR}/${name}.json`]: JSON.stringify(data, null, 2),
  };
}
