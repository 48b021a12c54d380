// k6: bots against ordinary shoppers. BOTS bot shoppers (10 per client address) send purchases
// back to back from before the start; SHOPPERS ordinary shoppers (an address each) send one
// purchase each over the sale's first seconds. Reports the share of the stock the bots got. Run
// it against an API with limits off, then on (RATE_LIMIT_USER / RATE_LIMIT_IP, TRUST_PROXY=true:
// the X-Forwarded-For this script sends names the client):
//   k6 run -e ADMIN_TOKEN=... -e STOCK=300 -e LIMIT_PER_USER=10 -e BOTS=50 -e SHOPPERS=2000 \
//     load-tests/bots.js
import { check } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter } from 'k6/metrics';
import { env, metrics, SHOP_ANSWERS, summary, verify } from './lib/sale.js';

const BOTS = Number(__ENV.BOTS || 50);
const SHOPPERS = Number(__ENV.SHOPPERS || 2000);
const LIMIT_PER_USER = Number(__ENV.LIMIT_PER_USER || 10);
/** seconds from setup's seed to the start of the sale (the bots start hammering at once) */
const LEAD_S = Number(__ENV.LEAD_S || 3);
/** ordinary shoppers arrive over this many seconds from the start */
const SPREAD_S = Number(__ENV.SPREAD_S || 2);

const botUnits = new Counter('seckill_bot_units');
const shopperUnits = new Counter('seckill_shopper_units');

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    bots: {
      executor: 'constant-vus',
      vus: BOTS,
      duration: `${LEAD_S + SPREAD_S + 3}s`,
      exec: 'bot',
    },
    shoppers: {
      // SHOPPERS arrivals spread evenly over SPREAD_S from the start
      executor: 'constant-arrival-rate',
      rate: Math.ceil(SHOPPERS / SPREAD_S),
      timeUnit: '1s',
      duration: `${SPREAD_S}s`,
      preAllocatedVUs: 200,
      maxVUs: 1000,
      startTime: `${LEAD_S}s`,
      exec: 'shopper',
    },
  },
  thresholds: {
    seckill_errors: ['count==0'],
    seckill_invariant_violations: ['count==0'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S + 30}s`,
  summaryTrendStats: ['med', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  const productId = __ENV.PRODUCT_ID || `k6-bots-${Date.now()}`;
  const res = http.put(
    `${env.BASE_URL}/admin/products/${productId}?force=true`,
    JSON.stringify({
      total: env.STOCK,
      strategy: 'lockfree',
      segments: 16,
      limitPerUser: LIMIT_PER_USER,
      startsAt: new Date(Date.now() + LEAD_S * 1000).toISOString(),
    }),
    {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.ADMIN_TOKEN}` },
    },
  );
  if (res.status !== 200 && res.status !== 201) throw new Error(`seed: ${res.status} ${res.body}`);
  return { productId };
}

/**
 * @param {string} productId
 * @param {string} user
 * @param {string} ip
 */
function buy(productId, user, ip) {
  const res = http.post(`${env.BASE_URL}/seckill`, JSON.stringify({ productId }), {
    headers: { 'content-type': 'application/json', 'x-user-id': user, 'x-forwarded-for': ip },
    responseCallback: SHOP_ANSWERS,
    tags: { name: 'seckill' },
  });
  if (res.status === 202) metrics.accepted.add(1);
  if (res.status === 429) metrics.rateLimited.add(1);
  if (res.status >= 500 && res.status !== 503) metrics.errors.add(1);
  return res;
}

/** @param {{ productId: string }} data */
export function bot(data) {
  const vu = exec.vu.idInTest;
  const res = buy(data.productId, `k6-bot-${vu}`, `10.66.0.${vu % Math.ceil(BOTS / 10)}`);
  if (res.status === 202) botUnits.add(1);
}

/** @param {{ productId: string }} data */
export function shopper(data) {
  const i = exec.scenario.iterationInTest;
  if (i >= SHOPPERS) return;
  const ip = `10.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
  const res = buy(data.productId, `k6-shopper-${i}`, ip);
  if (res.status === 202) shopperUnits.add(1);
}

/** @param {{ productId: string }} data */
export function teardown(data) {
  const report = verify(data.productId);
  check(report, {
    'sold no more than the stock': (r) => r !== undefined && r.persisted <= r.total,
  });
}

/** @param {Record<string, any>} data */
export function handleSummary(data) {
  const count = (/** @type {string} */ k) => (data.metrics[k] && data.metrics[k].values.count) || 0;
  const bots = count('seckill_bot_units');
  const people = count('seckill_shopper_units');
  return summary(data, 'bots', [
    `stock ${env.STOCK}: bots got ${bots} (${((100 * bots) / env.STOCK).toFixed(1)} %), ` +
      `shoppers ${people}; ${count('seckill_rate_limited')} requests rate-limited`,
  ]);
}
