// k6 comparison: the same arrival rate against the single global lock, segmented locks
// (N = 4, 16, 64) and the lock-free deduct, one scenario after the other, each on its own product.
//   k6 run -e ADMIN_TOKEN=... -e RATE=3000 -e DURATION=20s load-tests/compare.js
// STOCK (default 10 000 000) is meant to outlast the run, so accepted/s measures each strategy's
// throughput; set it lower to compare sellouts. Writes RESULTS_DIR/compare.json.
import exec from 'k6/execution';
import { arrivalScenario, buy, env, seed, summary, thresholds, verify } from './lib/sale.js';

const ALL_VARIANTS = [
  { name: 'global', strategy: 'global', segments: 1 },
  { name: 'segmented_4', strategy: 'segmented', segments: 4 },
  { name: 'segmented_16', strategy: 'segmented', segments: 16 },
  { name: 'segmented_64', strategy: 'segmented', segments: 64 },
  { name: 'lockfree_16', strategy: 'lockfree', segments: 16 },
];
/** VARIANTS=global,lockfree_16 runs only those (default: all of them). */
const chosen = (__ENV.VARIANTS || '').split(',').filter(Boolean);
const unknown = chosen.filter((n) => !ALL_VARIANTS.some((v) => v.name === n));
if (unknown.length) {
  throw new Error(
    `VARIANTS: no variant ${unknown.join(', ')}; choose from ${ALL_VARIANTS.map((v) => v.name).join(', ')}`,
  );
}
export const VARIANTS = chosen.length
  ? ALL_VARIANTS.filter((v) => chosen.includes(v.name))
  : ALL_VARIANTS;
const STOCK = Number(__ENV.STOCK || 10_000_000);
const seconds = parseInt(env.DURATION, 10);
/** Pause between scenarios (GAP_S, default 5 s), so one's tail does not overlap the next. */
const GAP_S = Number(__ENV.GAP_S || 5);

/** @type {Record<string, import('k6/options').Scenario>} */
const scenarios = {};
/** @type {Record<string, string[]>} */
const perVariant = {};
VARIANTS.forEach((v, i) => {
  scenarios[v.name] = arrivalScenario({
    startTime: `${i * (seconds + GAP_S)}s`,
    tags: { variant: v.name },
  });
  // sub-metrics per variant, so the summary has each one's figures
  perVariant[`seckill_accepted{variant:${v.name}}`] = ['count>=0'];
  perVariant[`http_req_duration{variant:${v.name}}`] = ['max>=0'];
});

/** @type {import('k6/options').Options} */
export const options = {
  scenarios,
  thresholds: { ...thresholds, ...perVariant },
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S * VARIANTS.length + 30}s`,
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  const run = Date.now();
  /** @type {Record<string, string>} */
  const products = {};
  for (const v of VARIANTS) {
    products[v.name] = `k6-${v.name}-${run}`;
    seed(products[v.name], { strategy: v.strategy, segments: v.segments, total: STOCK });
  }
  return { products };
}

/** @param {{ products: Record<string, string> }} data */
export default function (data) {
  const variant = exec.scenario.name;
  buy(data.products[variant], { variant });
}

/** @param {{ products: Record<string, string> }} data */
export function teardown(data) {
  for (const v of VARIANTS) verify(data.products[v.name]);
}

/** @param {Record<string, any>} data */
export function handleSummary(data) {
  const lines = ['variant         accepted/s   p50 ms   p95 ms   p99 ms   ratio to global'];
  const acc = (/** @type {string} */ name) => {
    const m = data.metrics[`seckill_accepted{variant:${name}}`];
    return m ? m.values.count / seconds : 0;
  };
  const base = acc('global');
  for (const v of VARIANTS) {
    const d = data.metrics[`http_req_duration{variant:${v.name}}`];
    const q = d ? d.values : { med: 0, 'p(95)': 0, 'p(99)': 0 };
    lines.push(
      `${v.name.padEnd(14)}  ${acc(v.name).toFixed(0).padStart(10)}  ${q.med.toFixed(2).padStart(7)}  ` +
        `${q['p(95)'].toFixed(2).padStart(7)}  ${q['p(99)'].toFixed(2).padStart(7)}  ${base ? `${(acc(v.name) / base).toFixed(2).padStart(8)}x` : '       -'}`,
    );
  }
  return summary(data, 'compare', lines);
}
