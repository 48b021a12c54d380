// k6 flash sale: many shoppers (distinct ids) hit POST /seckill for one product.
//   k6 run -e ADMIN_TOKEN=... -e STRATEGY=segmented -e SEGMENTS=16 -e STOCK=1000 \
//     -e RATE=2000 -e DURATION=20s load-tests/flash-sale.js            (arrival-rate executor)
//   k6 run -e EXECUTOR=ramp -e VUS=200 ... load-tests/flash-sale.js   (VU ramp)
// setup() seeds the product through the admin API; teardown() waits for persistence and checks
// the invariants (reconciliation clean, no oversell; accepted == stock when demand exceeds it).
import {
  arrivalScenario,
  buy,
  env,
  metrics,
  seed,
  summary,
  thresholds,
  verify,
} from './lib/sale.js';

const arrival = arrivalScenario();
/** @type {import('k6/options').Scenario} */
const ramp = {
  executor: 'ramping-vus',
  startVUs: 0,
  stages: [
    { duration: '5s', target: env.VUS },
    { duration: env.DURATION, target: env.VUS },
    { duration: '5s', target: 0 },
  ],
};

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: { sale: __ENV.EXECUTOR === 'ramp' ? ramp : arrival },
  thresholds,
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S + 30}s`,
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  const productId = __ENV.PRODUCT_ID || `k6-${env.STRATEGY}-${Date.now()}`;
  seed(productId, { strategy: env.STRATEGY, segments: env.SEGMENTS, total: env.STOCK });
  return { productId };
}

/** @param {{ productId: string }} data */
export default function (data) {
  buy(data.productId);
}

/** @param {{ productId: string }} data */
export function teardown(data) {
  const report = verify(data.productId);
  // When demand exceeded the stock, the whole stock must have sold and persisted.
  if (report && report.remaining === 0 && report.persisted !== report.total) {
    metrics.invariantViolations.add(1);
    console.error(`sold out but persisted ${report.persisted} of ${report.total}`);
  }
}

/** @param {Record<string, any>} data */
export function handleSummary(data) {
  const accepted =
    (data.metrics.seckill_accepted && data.metrics.seckill_accepted.values.count) || 0;
  const soldOut =
    (data.metrics.seckill_sold_out && data.metrics.seckill_sold_out.values.count) || 0;
  const lines = [];
  if (soldOut > 0 && accepted !== env.STOCK) {
    lines.push(
      `INVARIANT VIOLATED: demand exceeded stock but accepted ${accepted} != ${env.STOCK}`,
    );
  }
  return summary(data, 'flash-sale', lines);
}
