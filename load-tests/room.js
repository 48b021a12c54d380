// k6: a crowd through the waiting room (docs/waiting-room.md). SHOPPERS shoppers arrive over
// SPREAD_S seconds from the seed, the first of them before the opening (LEAD_S after the seed):
// each joins (POST /products/:id/queue), polls (GET) no sooner than the answer's pollAfterSeconds,
// and once admitted buys one unit with the sale token it was given (Sale-Token on POST /seckill).
// SKIPPERS more shoppers try to buy without joining: each must be refused 403. Needs an API with
// SALE_TOKEN_SECRET set (npm start sets one). Teardown checks the books as the other scripts do.
//   k6 run -e ADMIN_TOKEN=... -e STOCK=200 -e SHOPPERS=1000 -e ADMIT_PER_SECOND=100 \
//     load-tests/room.js
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter, Trend } from 'k6/metrics';
import { env, metrics, SHOP_ANSWERS, summary, thresholds, verify } from './lib/sale.js';

const SHOPPERS = Number(__ENV.SHOPPERS || 1000);
const SKIPPERS = Number(__ENV.SKIPPERS || 20);
/** seconds from setup's seed to the opening: who joins before it is in the shuffled lobby */
const LEAD_S = Number(__ENV.LEAD_S || 2);
/** shoppers arrive evenly over this many seconds from the seed */
const SPREAD_S = Number(__ENV.SPREAD_S || 4);
/** a shopper gives up this long after joining */
const PATIENCE_S = Number(__ENV.PATIENCE_S || 60);
const ROOM = {
  admitPerSecond: Number(__ENV.ADMIT_PER_SECOND || 100),
  maxActive: Number(__ENV.MAX_ACTIVE || 200),
  admittedForSeconds: Number(__ENV.ADMITTED_FOR_S || 10),
};

const room = {
  joins: new Counter('seckill_room_joins'),
  polls: new Counter('seckill_room_polls'),
  admitted: new Counter('seckill_room_admitted'),
  /** told sold-out (or ended) while in line: nothing more to wait for */
  toldSoldOut: new Counter('seckill_room_told_sold_out'),
  /** purchases without a sale token refused 403, as they must be */
  skipRefused: new Counter('seckill_room_skip_refused'),
  gaveUp: new Counter('seckill_room_gave_up'),
  /** seconds from the join to admission */
  waited: new Trend('seckill_room_wait_s'),
};

const ROOM_ANSWERS = http.expectedStatuses(200, 201, 202, 429, 503);
const jsonHeaders = (/** @type {string} */ user, /** @type {string} */ ip) => ({
  'content-type': 'application/json',
  'x-user-id': user,
  'x-forwarded-for': ip,
});

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    shoppers: {
      executor: 'constant-arrival-rate',
      rate: Math.max(1, Math.ceil(SHOPPERS / SPREAD_S)),
      timeUnit: '1s',
      duration: `${SPREAD_S}s`,
      // every shopper waits in a VU of its own
      preAllocatedVUs: Math.min(SHOPPERS, 2000),
      maxVUs: SHOPPERS,
      exec: 'shopper',
    },
    skippers: {
      executor: 'per-vu-iterations',
      vus: SKIPPERS,
      iterations: 1,
      startTime: `${LEAD_S + 0.5}s`,
      exec: 'skipper',
    },
  },
  thresholds: { ...thresholds, seckill_room_admitted: ['count>0'] },
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S + 30}s`,
  summaryTrendStats: ['med', 'p(90)', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  const productId = __ENV.PRODUCT_ID || `k6-room-${Date.now()}`;
  const res = http.put(
    `${env.BASE_URL}/admin/products/${productId}?force=true`,
    JSON.stringify({
      total: env.STOCK,
      strategy: 'lockfree',
      segments: 16,
      startsAt: new Date(Date.now() + LEAD_S * 1000).toISOString(),
      waitingRoom: ROOM,
    }),
    {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.ADMIN_TOKEN}` },
      responseCallback: http.expectedStatuses(200, 201),
    },
  );
  if (res.status !== 200 && res.status !== 201) throw new Error(`seed: ${res.status} ${res.body}`);
  return { productId };
}

/**
 * @typedef {{ state?: string, pollAfterSeconds?: number | null, saleToken?: string }} PlaceView
 * @param {import('k6/http').RefinedResponse<any>} res
 * @returns {PlaceView}
 */
function viewOf(res) {
  try {
    return /** @type {PlaceView} */ (res.json());
  } catch {
    return {};
  }
}

/**
 * One purchase, its outcome counted as the other scripts count it.
 * @param {string} productId
 * @param {{ 'content-type': string, 'x-user-id': string, 'x-forwarded-for': string }} headers
 * @param {string | undefined} token
 */
function buy(productId, headers, token) {
  const res = http.post(`${env.BASE_URL}/seckill`, JSON.stringify({ productId }), {
    headers: token ? { ...headers, 'sale-token': token } : headers,
    tags: { name: 'seckill' },
    responseCallback: token ? SHOP_ANSWERS : http.expectedStatuses(403),
  });
  if (res.status === 202) metrics.accepted.add(1);
  else if (res.status === 409) metrics.soldOut.add(1);
  else if (res.status === 429) metrics.rateLimited.add(1);
  else if (res.status >= 500 && res.status !== 503) metrics.errors.add(1);
  else metrics.rejected.add(1);
  return res;
}

/** @param {{ productId: string }} data */
export function shopper(data) {
  const i = exec.scenario.iterationInTest;
  if (i >= SHOPPERS) return;
  const headers = jsonHeaders(`k6-room-${i}`, `10.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`);
  const queue = `${env.BASE_URL}/products/${data.productId}/queue`;
  const joinedAt = Date.now();
  let res = http.post(queue, null, {
    headers,
    tags: { name: 'join' },
    responseCallback: ROOM_ANSWERS,
  });
  room.joins.add(1);
  let view = viewOf(res);
  while (Date.now() - joinedAt < PATIENCE_S * 1000) {
    if (res.status >= 500 && res.status !== 503) {
      metrics.errors.add(1);
      return;
    }
    if (view.state === 'admitted' && view.saleToken) break;
    if (view.state === 'sold-out' || view.state === 'ended') {
      room.toldSoldOut.add(1);
      return;
    }
    // as told: the answer spreads the polls (429 / 503 say it with Retry-After)
    const wait = Number(view.pollAfterSeconds ?? res.headers['Retry-After'] ?? 1);
    sleep(Math.max(0.05, wait));
    res = http.get(queue, { headers, tags: { name: 'poll' }, responseCallback: ROOM_ANSWERS });
    room.polls.add(1);
    if (res.status === 200) view = viewOf(res);
  }
  if (view.state !== 'admitted' || !view.saleToken) {
    room.gaveUp.add(1);
    return;
  }
  room.admitted.add(1);
  room.waited.add((Date.now() - joinedAt) / 1000);
  buy(data.productId, headers, view.saleToken);
}

/** @param {{ productId: string }} data */
export function skipper(data) {
  const vu = exec.vu.idInTest;
  const res = buy(
    data.productId,
    jsonHeaders(`k6-skipper-${vu}`, `10.99.0.${vu & 255}`),
    undefined,
  );
  if (res.status === 403) room.skipRefused.add(1);
  else if (res.status === 202) {
    metrics.invariantViolations.add(1);
    console.error(`a shopper who skipped the line bought: ${res.body}`);
  }
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
  const m = data.metrics;
  const count = (/** @type {string} */ k) => (m[k] && m[k].values.count) || 0;
  const w = m.seckill_room_wait_s && m.seckill_room_wait_s.values;
  return summary(data, 'room', [
    `room: ${count('seckill_room_joins')} joined, ${count('seckill_room_polls')} polls, ` +
      `${count('seckill_room_admitted')} admitted, ${count('seckill_room_told_sold_out')} told sold-out, ` +
      `${count('seckill_room_gave_up')} gave up; ${count('seckill_room_skip_refused')}/${SKIPPERS} ` +
      `purchases without a token refused 403`,
    w
      ? `wait s: p50 ${w.med.toFixed(2)}  p90 ${w['p(90)'].toFixed(2)}  max ${w.max.toFixed(2)}`
      : '',
  ]);
}
