// k6 comparison of the strategies at one open arrival rate, one variant after the other, each on
// its own product, in three families (ROUNDS > 1 runs the list that many times over, so a slow
// spell of a shared machine falls on every variant):
//   path    today's sale at BASE_URL: global, segmented N = 4, 16, 64 and lockfree N=16; with
//           HELD_URL also global and segmented N=16 while restocks hold their segment locks the
//           full way (the held-lock server's restocker, sharing the API's KEY_PREFIX)
//   held    the held-lock baseline at HELD_URL (load-tests/bench/held-lock-server.ts): this
//           project's lock held the full way by the application, global and N = 4, 16, 64
//   hotkey  global and segmented N=16 at CLUSTER_URL (an API on a Redis Cluster)
//   k6 run -e ADMIN_TOKEN=... -e RATE=6000 -e DURATION=15s load-tests/compare.js
// Set RATE above what the machine serves, so no variant is capped by the arrivals (`npm run
// bench:k6` measures that first). FAMILIES=path,held,hotkey picks families (default: path, and
// each other one whose URL is set); VARIANTS=global,held_16 picks variants. STOCK (default
// 10 000 000) outlasts the run. Writes RESULTS_DIR/compare.json.
import { sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { arrivalScenario, buy, env, seed, summary, thresholds, verify } from './lib/sale.js';

const URLS = {
  path: env.BASE_URL,
  held: __ENV.HELD_URL || '',
  hotkey: __ENV.CLUSTER_URL || '',
};

/** @typedef {{ name: string, family: 'path' | 'held' | 'hotkey', strategy: string, segments: number, restocks?: boolean, baseline: string }} Variant */
/** @type {Variant[]} */
const ALL_VARIANTS = [
  { name: 'global', family: 'path', strategy: 'global', segments: 1, baseline: 'global' },
  { name: 'segmented_4', family: 'path', strategy: 'segmented', segments: 4, baseline: 'global' },
  { name: 'segmented_16', family: 'path', strategy: 'segmented', segments: 16, baseline: 'global' },
  { name: 'segmented_64', family: 'path', strategy: 'segmented', segments: 64, baseline: 'global' },
  { name: 'lockfree_16', family: 'path', strategy: 'lockfree', segments: 16, baseline: 'global' },
  {
    name: 'global_restocks',
    family: 'path',
    strategy: 'global',
    segments: 1,
    restocks: true,
    baseline: 'global_restocks',
  },
  {
    name: 'segmented_16_restocks',
    family: 'path',
    strategy: 'segmented',
    segments: 16,
    restocks: true,
    baseline: 'global_restocks',
  },
  { name: 'held_global', family: 'held', strategy: 'global', segments: 1, baseline: 'held_global' },
  { name: 'held_4', family: 'held', strategy: 'segmented', segments: 4, baseline: 'held_global' },
  { name: 'held_16', family: 'held', strategy: 'segmented', segments: 16, baseline: 'held_global' },
  { name: 'held_64', family: 'held', strategy: 'segmented', segments: 64, baseline: 'held_global' },
  {
    name: 'cluster_global',
    family: 'hotkey',
    strategy: 'global',
    segments: 1,
    baseline: 'cluster_global',
  },
  {
    name: 'cluster_segmented_16',
    family: 'hotkey',
    strategy: 'segmented',
    segments: 16,
    baseline: 'cluster_global',
  },
];

/** @param {Variant} v */
const usable = (v) => URLS[v.family] !== '' && (!v.restocks || URLS.held !== '');
const families = (__ENV.FAMILIES || '').split(',').filter(Boolean);
const chosen = (__ENV.VARIANTS || '').split(',').filter(Boolean);
const unknown = chosen.filter((n) => !ALL_VARIANTS.some((v) => v.name === n));
if (unknown.length) {
  throw new Error(
    `VARIANTS: no variant ${unknown.join(', ')}; choose from ${ALL_VARIANTS.map((v) => v.name).join(', ')}`,
  );
}
export const VARIANTS = ALL_VARIANTS.filter((v) =>
  chosen.length
    ? chosen.includes(v.name)
    : families.length
      ? families.includes(v.family)
      : usable(v),
);
const missing = VARIANTS.filter((v) => !usable(v)).map((v) => v.name);
if (missing.length) {
  throw new Error(`${missing.join(', ')}: need HELD_URL (held, restocks) or CLUSTER_URL (hotkey)`);
}
const STOCK = Number(__ENV.STOCK || 10_000_000);
const RESTOCKS_PER_S = Number(__ENV.RESTOCKS_PER_S || 20);
const seconds = parseInt(env.DURATION, 10);
/** Pause between scenarios (GAP_S, default 5 s), so one's tail does not overlap the next. */
const GAP_S = Number(__ENV.GAP_S || 5);
const ROUNDS = Number(__ENV.ROUNDS || 1);
/** the variant a scenario (`<variant>`, `<variant>__r2`, `<variant>__restocker...`) drives */
const variantOf = (/** @type {string} */ scenario) =>
  /** @type {Variant} */ (VARIANTS.find((v) => v.name === scenario.split('__')[0]));

/** @type {Record<string, import('k6/options').Scenario>} */
const scenarios = {};
/** @type {Record<string, string[]>} */
const perVariant = {};
/** @param {Variant} v */
const roundNames = (v) =>
  Array.from({ length: ROUNDS }, (_, r) => (r ? `${v.name}__r${r + 1}` : v.name));
for (let round = 0; round < ROUNDS; round++) {
  VARIANTS.forEach((v, i) => {
    const startTime = `${(round * VARIANTS.length + i) * (seconds + GAP_S)}s`;
    const name = round ? `${v.name}__r${round + 1}` : v.name;
    scenarios[name] = arrivalScenario({ startTime, tags: { variant: v.name } });
    // arrivals k6 could not start (every VU busy): carries the scenario's name, not its tags
    perVariant[`dropped_iterations{scenario:${name}}`] = ['count>=0'];
    if (v.restocks) {
      // one iteration that starts the restocker, waits out the variant's window and stops it
      scenarios[`${name}__restocker`] = {
        executor: 'per-vu-iterations',
        vus: 1,
        iterations: 1,
        startTime,
        maxDuration: `${seconds + 30}s`,
        exec: 'restocker',
        tags: { restocker: v.name },
      };
    }
  });
}
for (const v of VARIANTS) {
  // sub-metrics per variant, so the summary has each one's figures
  perVariant[`seckill_accepted{variant:${v.name}}`] = ['count>=0'];
  perVariant[`http_req_duration{variant:${v.name}}`] = ['max>=0'];
}

/** @type {import('k6/options').Options} */
export const options = {
  scenarios,
  thresholds: { ...thresholds, ...perVariant },
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S * VARIANTS.length + 30}s`,
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max'],
};

/** @param {Variant} v */
const baseOf = (v) => URLS[v.family];

export function setup() {
  const run = Date.now();
  /** @type {Record<string, string>} */
  const products = {};
  for (const v of VARIANTS) {
    products[v.name] = `k6-${v.name}-${run}`;
    seed(products[v.name], { strategy: v.strategy, segments: v.segments, total: STOCK }, baseOf(v));
  }
  return { products };
}

/** @param {{ products: Record<string, string> }} data */
export default function (data) {
  const v = variantOf(exec.scenario.name);
  buy(data.products[v.name], { variant: v.name }, baseOf(v));
}

const RESTOCKS_OK = http.expectedStatuses(200, 202);

/** @param {{ products: Record<string, string> }} data */
export function restocker(data) {
  const v = variantOf(exec.scenario.name);
  const params = {
    headers: { 'content-type': 'application/json', authorization: `Bearer ${env.ADMIN_TOKEN}` },
    tags: { name: 'restocks' },
    responseCallback: RESTOCKS_OK,
  };
  const body = {
    productId: data.products[v.name],
    segments: v.segments,
    perSecond: RESTOCKS_PER_S,
  };
  http.post(`${URLS.held}/bench/restocks`, JSON.stringify(body), params);
  sleep(seconds);
  const res = http.del(`${URLS.held}/bench/restocks`, null, params);
  console.log(`${exec.scenario.name}: ${res.body} (restocks that held a segment lock)`);
}

/** @param {{ products: Record<string, string> }} data */
export function teardown(data) {
  for (const v of VARIANTS) verify(data.products[v.name], baseOf(v));
}

/** @param {Record<string, any>} data */
export function handleSummary(data) {
  const lines = [
    `open arrivals: ${env.RATE}/s, ${ROUNDS} round(s) of ${seconds} s per variant`,
    'variant                  family  accepted/s  dropped/s   p50 ms   p95 ms   p99 ms  ratio to its global',
  ];
  const perS = (/** @type {string} */ metric) => {
    const m = data.metrics[metric];
    return m ? m.values.count / (seconds * ROUNDS) : 0;
  };
  const acc = (/** @type {string} */ name) => perS(`seckill_accepted{variant:${name}}`);
  for (const v of VARIANTS) {
    const d = data.metrics[`http_req_duration{variant:${v.name}}`];
    const q = d ? d.values : { med: 0, 'p(95)': 0, 'p(99)': 0 };
    const base = acc(v.baseline);
    lines.push(
      `${v.name.padEnd(22)}  ${v.family.padStart(6)}  ${acc(v.name).toFixed(0).padStart(10)}  ` +
        `${roundNames(v)
          .reduce((a, n) => a + perS(`dropped_iterations{scenario:${n}}`), 0)
          .toFixed(0)
          .padStart(9)}  ` +
        `${q.med.toFixed(2).padStart(7)}  ${q['p(95)'].toFixed(2).padStart(7)}  ${q['p(99)'].toFixed(2).padStart(7)}  ` +
        `${base ? `${(acc(v.name) / base).toFixed(2).padStart(8)}x (${v.baseline})` : '       -'}`,
    );
  }
  /** @type {Array<[string, string, string]>} */
  const RATIOS = [
    ['heldSegmented16VsHeldGlobal', 'held_16', 'held_global'],
    ['segmented16VsGlobal', 'segmented_16', 'global'],
    ['lockfreeVsGlobal', 'lockfree_16', 'global'],
    ['restocksSegmented16VsGlobal', 'segmented_16_restocks', 'global_restocks'],
    ['restocksGlobalVsGlobal', 'global_restocks', 'global'],
    ['clusterSegmented16VsGlobal', 'cluster_segmented_16', 'cluster_global'],
  ];
  const ratios = RATIOS.filter(([, a, b]) => acc(a) && acc(b)).map(
    ([name, a, b]) => `${name} ${(acc(a) / acc(b)).toFixed(2)}`,
  );
  if (ratios.length) lines.push(`ratios: ${ratios.join(', ')}`);
  return summary(data, 'compare', lines);
}
