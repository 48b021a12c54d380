/**
 * What the dashboard computes, from plain data (no store): refusals by kind from the merged
 * /metrics text, rates over a sliding window (a pause between bursts is not a stop), the order
 * sales are shown in, and how long a sale took to sell out.
 */
import { describe, expect, it } from 'vitest';
import type { ProductState, SegmentView } from '../../src/inventory/index.js';
import {
  ratesBetween,
  REFUSAL_KINDS,
  saleCounts,
  SlidingWindow,
  type SaleCounts,
} from '../../src/services/dashboard/rates.js';
import { bySaleOrder, dashboardSale, type OrderGroup } from '../../src/services/dashboard/sales.js';
import { parseMetrics } from '../../src/services/dashboard/metrics-text.js';

const problems = (counts: Record<string, number>, route = '/seckill') =>
  Object.entries(counts)
    .map(([code, n]) => `http_problems_total{route="${route}",code="${code}"} ${n}`)
    .join('\n');

describe('refusals by kind', () => {
  it('sums every API process and puts each problem code of POST /seckill in its kind', () => {
    const text = [
      '# HELP http_requests_total HTTP requests answered',
      'http_requests_total{method="POST",route="/seckill",status="202"} 700',
      'http_requests_total{method="POST",route="/seckill",status="202"} 45',
      'http_requests_total{method="GET",route="/products/:id",status="200"} 99',
      problems({ 'sold-out': 5000, 'insufficient-stock': 3, 'limit-reached': 20 }),
      problems({ 'sold-out': 1000, 'purchase-in-progress': 1, 'order-voided': 1 }),
      problems({ 'rate-limited': 31, 'lock-timeout': 4, 'store-unavailable': 6 }),
      problems({ 'shard-unavailable': 2, 'outcome-pending': 1, overloaded: 7, draining: 2 }),
      problems({ reseeding: 1, 'not-started': 11, ended: 12, internal: 1 }),
      problems({ 'invalid-request': 8, 'idempotency-key-in-use': 2, 'invalid-sale-token': 3 }),
      // another route's problems are not purchases
      problems({ 'sold-out': 400, internal: 9 }, '/orders/:id/pay'),
    ].join('\n');
    const c = saleCounts(parseMetrics(text));
    expect(c.accepted).toBe(745);
    expect(c.refusals).toEqual({
      soldOut: 6003,
      limit: 22,
      rateLimited: 31,
      lockTimeout: 4,
      store: 9,
      shed: 10,
      closed: 23,
      error: 1,
      other: 13,
    });
    expect(REFUSAL_KINDS.map((k) => k.kind)).toEqual(Object.keys(c.refusals));
  });
});

const counts = (accepted: number, soldOut = 0, latency: Array<[number, number]> = []) => {
  const c = saleCounts(parseMetrics(''));
  return { ...c, accepted, refusals: { ...c.refusals, soldOut }, latency } as SaleCounts;
};

describe('rates over a sliding window', () => {
  it('keep a burst in the rate for the whole window, where the last tick reads 0', () => {
    const window = new SlidingWindow(10_000);
    // 1,000 accepted in the first second, then nothing: a tick every 500 ms
    const at = (ms: number) => ({ at: ms, counts: counts(ms === 0 ? 0 : ms <= 500 ? 400 : 1000) });
    const rates: Record<number, number> = {};
    let previous = at(0);
    const lastTick: Record<number, number> = {};
    for (let ms = 0; ms <= 12_000; ms += 500) {
      rates[ms] = window.add(at(ms)).accepted;
      lastTick[ms] = ratesBetween(previous, at(ms)).accepted;
      previous = at(ms);
    }
    expect(rates[500]).toBe(800); // 400 in 0.5 s: the window is as long as the history so far
    expect(rates[1_000]).toBe(1_000);
    expect(rates[1_500]).toBeCloseTo(1_000 / 1.5, 9);
    expect(rates[5_000]).toBe(200);
    expect(rates[10_000]).toBe(100); // the whole 10 s window, the burst in it
    expect(rates[10_500]).toBe(60); // from 500 ms: 600 of the burst still inside
    expect(rates[11_000]).toBe(0); // the burst has left the window
    expect(rates[12_000]).toBe(0);
    // what a rate over the last tick showed: 0 half a second after the burst
    expect(lastTick[1_500]).toBe(0);
    expect(lastTick[5_000]).toBe(0);
  });

  it('counts a counter that went down (an API process restarted) from 0, never negative', () => {
    const window = new SlidingWindow(10_000);
    window.add({ at: 0, counts: counts(500, 90) });
    const r = window.add({ at: 2_000, counts: counts(40, 100) });
    expect(r.accepted).toBe(20); // 40 since the restart, over 2 s
    expect(r.refusals.soldOut).toBe(5);
    expect(r.refused).toBe(5);
  });

  it('takes latency quantiles over the window, not since start', () => {
    const window = new SlidingWindow(10_000);
    // 100 requests in the first bucket (<= 1 ms) before the window, then 10 slow ones (<= 100 ms)
    const before: Array<[number, number]> = [
      [0.001, 100],
      [0.1, 100],
      [Infinity, 100],
    ];
    const after: Array<[number, number]> = [
      [0.001, 100],
      [0.1, 110],
      [Infinity, 110],
    ];
    window.add({ at: 0, counts: counts(0, 0, before) });
    const r = window.add({ at: 500, counts: counts(0, 0, after) });
    expect(r.seconds).toBe(0.5);
    expect(r.latency.p50).toBeCloseTo(50.5, 9); // inside (1, 100] ms, interpolated
    expect(r.latency.p99).toBeCloseTo(99.01, 9);
    // 10.5 s on, nothing new in the window: no latency to show (since start, p50 was 1 ms)
    const quiet = window.add({ at: 11_000, counts: counts(0, 0, after) });
    expect(quiet.latency).toEqual({ p50: null, p99: null });
  });
});

const segment = (i: number, stock: number, sold: number, extra: Partial<SegmentView> = {}) => ({
  segment: i,
  stock,
  sold,
  returned: 0,
  added: 0,
  pending: 0,
  ...extra,
});

function state(id: string, status: ProductState['status'], over: Partial<ProductState> = {}) {
  const segments = over.segments ?? [segment(0, 0, 5), segment(1, 0, 5)];
  const remaining = segments.reduce((a, s) => a + s.stock, 0);
  return {
    productId: id,
    epoch: 1,
    total: 10,
    strategy: 'segmented',
    limitPerUser: 1,
    payWithinSeconds: 0,
    paused: false,
    waitingRoom: null,
    draw: null,
    challenge: 'default',
    startsAt: 0,
    endsAt: 0,
    soldOut: remaining === 0,
    remaining,
    sold: segments.reduce((a, s) => a + s.sold, 0),
    returned: 0,
    status,
    segments,
    price: null,
    ...over,
  } satisfies ProductState;
}

const group = (o: Partial<OrderGroup>): OrderGroup => ({
  productId: 'p',
  epoch: 1,
  status: 'final',
  units: 1,
  firstAt: 0,
  lastAt: 0,
  ...o,
});

describe('sales as the dashboard shows them', () => {
  it('sends segments as parallel arrays, shards by index, unreachable ones by number', () => {
    const s = dashboardSale(
      state('p', 'live', {
        segments: [
          segment(0, 7, 3, { shard: '10.0.0.2:7001', pending: 2 }),
          segment(1, 0, 0, { shard: '10.0.0.1:7000', unreachable: true }),
          segment(2, 4, 7, { shard: '10.0.0.2:7001', returned: 1 }),
        ],
      }),
      [],
    );
    expect(s.segments).toEqual({
      stock: [7, 0, 4],
      sold: [3, 0, 7],
      returned: [0, 0, 1],
      shard: [1, 0, 1],
      unreachable: [1],
    });
    expect(s.shards).toEqual(['10.0.0.1:7000', '10.0.0.2:7001']);
    expect(s.backlog).toBe(2);
    const single = dashboardSale(state('q', 'live'), []);
    expect(single.segments.shard).toEqual([]);
    expect(single.shards).toEqual([]);
  });

  it('says how long a sale took to sell out: from startsAt, else from the first sale', () => {
    const groups = [
      group({ status: 'final', units: 6, firstAt: 10_400, lastAt: 11_200 }),
      group({ status: 'paid', units: 4, firstAt: 10_300, lastAt: 11_900 }),
      group({ epoch: 0, firstAt: 1, lastAt: 99_999 }), // an earlier sale of the product
      group({ productId: 'other', firstAt: 2, lastAt: 99_999 }),
    ];
    const fromStart = dashboardSale(state('p', 'sold out', { startsAt: 10_000 }), groups);
    expect(fromStart).toMatchObject({
      soldOutAfterMs: 1_900,
      soldOutFrom: 'start',
      orders: { final: 6, paid: 4 },
    });
    const noStart = dashboardSale(state('p', 'sold out'), groups);
    expect(noStart).toMatchObject({ soldOutAfterMs: 1_600, soldOutFrom: 'first sale' });
    // orders still in an outbox: the last sale may not be in PostgreSQL yet
    const persisting = dashboardSale(
      state('p', 'sold out', { segments: [segment(0, 0, 10, { pending: 1 })] }),
      groups,
    );
    expect(persisting.soldOutAfterMs).toBeNull();
    const live = dashboardSale(state('p', 'live', { segments: [segment(0, 1, 9)] }), groups);
    expect(live.soldOutAfterMs).toBeNull();
    // an ended sale that had sold out says so too, folded
    const ended = dashboardSale(state('p', 'ended', { startsAt: 10_000 }), groups);
    expect(ended).toMatchObject({ soldOutAfterMs: 1_900, folded: true });
  });

  it('lists live sales first, then upcoming by start, then sold out, then ended', () => {
    const sales = [
      dashboardSale(state('e', 'ended'), []),
      dashboardSale(state('u-late', 'upcoming', { startsAt: 9_000 }), []),
      dashboardSale(state('s', 'sold out'), []),
      dashboardSale(state('l-b', 'live'), []),
      dashboardSale(state('u-soon', 'upcoming', { startsAt: 5_000 }), []),
      dashboardSale(state('l-a', 'live'), []),
    ];
    expect(sales.sort(bySaleOrder).map((s) => [s.productId, s.folded])).toEqual([
      ['l-a', false],
      ['l-b', false],
      ['u-soon', false],
      ['u-late', false],
      ['s', false],
      ['e', true],
    ]);
  });
});
