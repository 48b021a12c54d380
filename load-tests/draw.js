// k6: a draw (docs/draw.md). ENTRANTS shoppers enter over the entry window (WINDOW_S seconds
// from the seed), every REPEAT_EVERY-th of them twice (the second answer must be the first entry);
// each then reads its entry (GET, as told by Retry-After when limited) until it is drawn: a winner
// buys one unit with the purchase right it was given (Sale-Token on POST /seckill), except every
// DECLINE_EVERY-th winner, who lets the right run out (BUY_S seconds) so the unit passes down the
// waitlist; a waitlisted shopper keeps reading until it wins or is told not drawn. Checks on every
// answer; teardown reconciles the sale and reads the transcript: as many winners as units,
// bought entries as many as the units sold. Needs an API with SALE_TOKEN_SECRET and a beacon
// chain (npm start sets both; DRAW_BEACON_MARGIN_MS sets how long the draw waits after the close).
//   k6 run -e ADMIN_TOKEN=... -e STOCK=50 -e ENTRANTS=500 -e WINDOW_S=10 load-tests/draw.js
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter, Trend } from 'k6/metrics';
import { env, metrics, SHOP_ANSWERS, summary, thresholds, verify } from './lib/sale.js';

const ENTRANTS = Number(__ENV.ENTRANTS || 500);
/** seconds from the seed to the close: the entries arrive over all of it but its last second */
const WINDOW_S = Number(__ENV.WINDOW_S || 10);
const BUY_S = Number(__ENV.BUY_S || 10);
const REPEAT_EVERY = Number(__ENV.REPEAT_EVERY || 10);
/** 0: every winner buys */
const DECLINE_EVERY = Number(__ENV.DECLINE_EVERY || 10);
/** a shopper stops reading its entry this long after the close */
const PATIENCE_S = Number(__ENV.PATIENCE_S || 120);

const draw = {
  entered: new Counter('seckill_draw_entered'),
  /** a second entry answered 200 with the first entry's id */
  repeatedSame: new Counter('seckill_draw_repeated_same'),
  reads: new Counter('seckill_draw_reads'),
  won: new Counter('seckill_draw_won'),
  /** a rank past the units won: a unit passed down the waitlist to them */
  wonFromWaitlist: new Counter('seckill_draw_won_from_waitlist'),
  declined: new Counter('seckill_draw_declined'),
  notDrawn: new Counter('seckill_draw_not_drawn'),
  gaveUp: new Counter('seckill_draw_gave_up'),
  /** seconds from the close to the purchase right */
  wonAfter: new Trend('seckill_draw_won_after_s'),
};

const ENTRY_ANSWERS = http.expectedStatuses(200, 201, 429, 503);
const READ_ANSWERS = http.expectedStatuses(200, 429, 503);
const STATES = ['entered', 'won', 'waitlisted', 'expired', 'not-drawn'];

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    entrants: {
      executor: 'constant-arrival-rate',
      rate: Math.max(1, Math.ceil(ENTRANTS / Math.max(1, WINDOW_S - 1))),
      timeUnit: '1s',
      duration: `${Math.max(1, WINDOW_S - 1)}s`,
      // every entrant waits for its draw in a VU of its own
      preAllocatedVUs: Math.min(ENTRANTS, 2000),
      // the last second's arrivals may round past ENTRANTS: those return at once
      maxVUs: ENTRANTS + Math.ceil(ENTRANTS / Math.max(1, WINDOW_S - 1)),
      exec: 'entrant',
      // an entrant waits past the window for its draw and its turn
      gracefulStop: `${PATIENCE_S + 30}s`,
    },
  },
  thresholds: {
    ...thresholds,
    seckill_draw_entered: [`count==${ENTRANTS}`],
    seckill_draw_repeated_same: [`count==${Math.floor((ENTRANTS - 1) / REPEAT_EVERY) + 1}`],
    seckill_accepted: [`count==${Math.min(env.STOCK, ENTRANTS)}`],
    seckill_draw_gave_up: ['count==0'],
    checks: ['rate==1'],
  },
  setupTimeout: '60s',
  teardownTimeout: `${env.PERSIST_TIMEOUT_S + 30}s`,
  summaryTrendStats: ['med', 'p(90)', 'p(95)', 'p(99)', 'max'],
};

export function setup() {
  const productId = __ENV.PRODUCT_ID || `k6-draw-${Date.now()}`;
  const closeAt = Date.now() + WINDOW_S * 1000;
  const res = http.put(
    `${env.BASE_URL}/admin/products/${productId}?force=true&discard=line`,
    JSON.stringify({
      total: env.STOCK,
      strategy: 'segmented',
      segments: 4,
      draw: {
        entriesOpenAt: new Date(Date.now() - 1000).toISOString(),
        entriesCloseAt: new Date(closeAt).toISOString(),
        buyWithinSeconds: BUY_S,
      },
    }),
    {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.ADMIN_TOKEN}` },
      responseCallback: http.expectedStatuses(200, 201),
    },
  );
  if (res.status !== 200 && res.status !== 201) throw new Error(`seed: ${res.status} ${res.body}`);
  return { productId, closeAt };
}

/**
 * @typedef {{ entryId?: string, state?: string, rank?: number | null, saleToken?: string }} EntryView
 * @param {import('k6/http').RefinedResponse<any>} res
 * @returns {EntryView}
 */
function viewOf(res) {
  try {
    return /** @type {EntryView} */ (res.json());
  } catch {
    return {};
  }
}

/** @param {import('k6/http').RefinedResponse<any>} res */
const retryAfter = (res) => Math.max(0.2, Number(res.headers['Retry-After'] || 1));

/**
 * An entry (again while limited or busy); its answer checked.
 * @param {string} url
 * @param {Record<string, string>} headers
 */
function enter(url, headers) {
  for (;;) {
    const res = http.post(url, null, {
      headers,
      tags: { name: 'entry' },
      responseCallback: ENTRY_ANSWERS,
    });
    if (res.status === 429 || res.status === 503) {
      sleep(retryAfter(res));
      continue;
    }
    const view = viewOf(res);
    check(res, { 'an entry is 201 or 200 with its id': (r) => r.status <= 201 && !!view.entryId });
    return { status: res.status, view };
  }
}

/** @param {{ productId: string, closeAt: number }} data */
export function entrant(data) {
  const i = exec.scenario.iterationInTest;
  if (i >= ENTRANTS) return;
  const headers = {
    'x-user-id': `k6-draw-${i}`,
    'x-forwarded-for': `10.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
  };
  const url = `${env.BASE_URL}/products/${data.productId}/draw/entry`;
  const first = enter(url, headers);
  if (first.status !== 201) return void metrics.errors.add(1);
  draw.entered.add(1);
  if (i % REPEAT_EVERY === 0) {
    const again = enter(url, headers);
    const same = check(again, {
      'a second entry answers the first': (a) =>
        a.status === 200 && a.view.entryId === first.view.entryId,
    });
    if (same) draw.repeatedSame.add(1);
  }
  sleep(Math.max(0, (data.closeAt - Date.now()) / 1000));
  /** @type {EntryView} */
  let view = {};
  while (Date.now() < data.closeAt + PATIENCE_S * 1000) {
    const res = http.get(url, { headers, tags: { name: 'read' }, responseCallback: READ_ANSWERS });
    draw.reads.add(1);
    if (res.status !== 200) {
      sleep(retryAfter(res));
      continue;
    }
    view = viewOf(res);
    check(view, {
      'an entry read names its entry and a known state': (v) =>
        v.entryId === first.view.entryId && STATES.includes(v.state || ''),
    });
    if (view.state === 'won' || view.state === 'not-drawn' || view.state === 'expired') break;
    sleep(1);
  }
  if (view.state === 'not-drawn') return void draw.notDrawn.add(1);
  if (view.state !== 'won') return void draw.gaveUp.add(1);
  draw.won.add(1);
  // by rank, not by a waitlisted read: the admitter hands the first ranks their rights at its
  // rate, so a first-round winner may read `waitlisted` for a moment (a busy machine showed it)
  const cascaded = (view.rank || 0) > Math.min(env.STOCK, ENTRANTS);
  if (cascaded) draw.wonFromWaitlist.add(1);
  draw.wonAfter.add((Date.now() - data.closeAt) / 1000);
  check(view, { 'a winner holds a rank and a purchase right': (v) => !!v.rank && !!v.saleToken });
  if (DECLINE_EVERY > 0 && view.rank && view.rank % DECLINE_EVERY === 0 && !cascaded) {
    return void draw.declined.add(1);
  }
  const res = http.post(`${env.BASE_URL}/seckill`, JSON.stringify({ productId: data.productId }), {
    headers: { ...headers, 'content-type': 'application/json', 'sale-token': view.saleToken || '' },
    tags: { name: 'seckill' },
    responseCallback: SHOP_ANSWERS,
  });
  check(res, { 'a winner buys with its right': (r) => r.status === 202 });
  if (res.status === 202) metrics.accepted.add(1);
  else metrics.errors.add(1);
}

/** @param {{ productId: string }} data */
export function teardown(data) {
  const report = verify(data.productId);
  const res = http.get(`${env.BASE_URL}/products/${data.productId}/draw`, {
    tags: { name: 'transcript' },
  });
  const t =
    /** @type {{ state?: string, entries?: number, winners?: string[], bought?: string[] }} */ (
      res.status === 200 ? res.json() : {}
    );
  const ok = check(t, {
    'the transcript is drawn, every entry listed': (x) =>
      x.state === 'drawn' && x.entries === ENTRANTS,
    'as many winners as units': (x) => (x.winners || []).length === Math.min(env.STOCK, ENTRANTS),
    'as many entries bought as units sold': (x) =>
      report !== undefined && (x.bought || []).length === report.persisted - report.returned,
  });
  if (!ok) {
    metrics.invariantViolations.add(1);
    const { state, entries, offered, bought } = /** @type {Record<string, unknown>} */ (t);
    console.error(
      `the transcript does not add up: ${JSON.stringify({ state, entries, offered, bought })}, ` +
        `the reconciliation: ${JSON.stringify(report)}`,
    );
  }
}

/** @param {Record<string, any>} data */
export function handleSummary(data) {
  const m = data.metrics;
  const count = (/** @type {string} */ k) => (m[k] && m[k].values.count) || 0;
  const w = m.seckill_draw_won_after_s && m.seckill_draw_won_after_s.values;
  return summary(data, 'draw', [
    `draw: ${count('seckill_draw_entered')} entered (${count('seckill_draw_repeated_same')} entered ` +
      `twice, answered the same entry), ${count('seckill_draw_reads')} reads, ` +
      `${count('seckill_draw_won')} won (${count('seckill_draw_won_from_waitlist')} from the ` +
      `waitlist), ${count('seckill_draw_declined')} let the right run out, ` +
      `${count('seckill_draw_not_drawn')} not drawn, ${count('seckill_draw_gave_up')} gave up`,
    w
      ? `won after the close, s: p50 ${w.med.toFixed(2)}  p90 ${w['p(90)'].toFixed(2)}  max ${w.max.toFixed(2)}`
      : '',
  ]);
}
