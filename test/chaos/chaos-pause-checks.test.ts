/**
 * The chaos checker's pause check (load-tests/chaos/pause-checks.ts) on made-up histories: a sale
 * inside an operator's pause window, acknowledged or only in the order rows, breaks it; sales at
 * the window's edges, which may have run before the pause or after the resume, do not.
 */
import { describe, expect, it } from 'vitest';
import type {
  ControlOp,
  HistoryEntry,
  OrderRow,
  PurchaseOp,
  RoomOp,
} from '../../load-tests/chaos/history.js';
import { noSaleWhilePaused, pauseWindows } from '../../load-tests/chaos/pause-checks.js';
import { purchaseOutcome, settlesKey } from '../../load-tests/chaos/shoppers.js';

let nextOp = 0;
const control = (
  action: ControlOp['action'],
  at: number,
  status = 200,
  product = 'room',
): ControlOp => ({
  type: 'control',
  op: nextOp++,
  action,
  product,
  invokeMs: at,
  completeMs: at + 20,
  status,
});
const buy = (user: string, at: number, answeredAt = at + 5, product = 'room'): PurchaseOp => ({
  type: 'purchase',
  op: nextOp++,
  user,
  key: `k-${user}`,
  product,
  quantity: 1,
  invokeMs: at,
  completeMs: answeredAt,
  outcome: 'ok',
  status: 202,
  orderId: `o-${user}`,
});
const refused = (user: string, at: number): PurchaseOp => ({
  ...buy(user, at),
  outcome: 'fail',
  status: 503,
  code: 'sale-paused',
  orderId: undefined,
});
const paused = (user: string, at: number): RoomOp => ({
  type: 'room',
  op: nextOp++,
  kind: 'poll',
  user,
  product: 'room',
  invokeMs: at,
  completeMs: at + 5,
  status: 200,
  state: 'paused',
  position: 3,
});
const row = (user: string, deductedMs: number, product = 'room'): OrderRow => ({
  id: `o-${user}`,
  idempotencyKey: `k-${user}`,
  product,
  user,
  quantity: 1,
  status: 'final',
  restocks: 0,
  deductedMs,
});

/**
 * Paused from 1,020 ms (the pause's answer) to 3,000 ms (the resume sent): a bought before, b
 * refused and told paused inside, b again after the resume; another product sells throughout.
 */
function healthy(): { history: HistoryEntry[]; orders: OrderRow[] } {
  return {
    history: [
      buy('a', 500),
      control('pause', 1_000),
      refused('b', 1_500),
      paused('c', 1_600),
      buy('x', 2_000, 2_005, 'other'),
      control('resume', 3_000),
      buy('b', 3_100),
    ],
    orders: [row('a', 502), row('x', 2_002, 'other'), row('b', 3_102)],
  };
}

const check = (h: { history: HistoryEntry[]; orders: OrderRow[] }) =>
  noSaleWhilePaused(h.history, { product: 'room', orders: h.orders });

describe("the chaos checker's pause check", () => {
  it('passes a history with no sale of the product while it was paused, and counts what it saw', () => {
    expect(pauseWindows(healthy().history, 'room')).toMatchObject([{ from: 1_020, to: 3_000 }]);
    expect(check(healthy())).toEqual({
      name: 'no-sale-while-paused',
      ok: true,
      paused: { ms: 1_980, purchases: 1, refused: 1, roomAnswers: 1 },
    });
  });

  it('fails on a purchase sent after the pause answered and acknowledged before the resume was sent', () => {
    const h = healthy();
    h.history.push(buy('d', 1_800, 2_900));
    h.orders.push(row('d', 1_850));
    const r = check(h);
    expect(r.ok).toBe(false);
    expect(r.counterExample).toMatch(
      /^op \d+ user d key k-d: sent at 1800 ms, acknowledged at 2900 ms, paused from 1020 ms \(op \d+ answered\) to 3000 ms \(op \d+ sent\)$/,
    );
  });

  it('fails on an order row sold inside the window whose answer the client never saw', () => {
    const h = healthy();
    h.history.push({ ...buy('e', 1_900, 6_900), outcome: 'unknown', status: 0 });
    h.orders.push(row('e', 2_400.5));
    const r = check(h);
    expect(r.ok).toBe(false);
    expect(r.counterExample).toMatch(/^order o-e user e: sold at 2400\.5 ms by Redis's clock/);
  });

  it('fails when the product was never resumed and sold later', () => {
    const h = healthy();
    h.history = h.history.filter((e) => e.type !== 'control' || e.action !== 'resume');
    const r = check(h);
    expect(r.ok).toBe(false);
    expect(r.counterExample).toMatch(/^op \d+ user b .* to the end$/);
  });

  it('passes the sales at the edges: sent before the pause answered, answered after the resume was sent, stamped within the clock grain', () => {
    const h = healthy();
    h.history.push(buy('f', 990, 1_200), buy('g', 2_950, 3_050));
    h.orders.push(row('f', 1_021), row('g', 3_001));
    expect(check(h).ok).toBe(true);
    // one millisecond further in, either would break it
    h.orders.push(row('h', 1_022));
    expect(check(h).ok).toBe(false);
  });

  it('opens the window at the first pause answered 200 and closes it at the first resume tried', () => {
    const h = healthy();
    h.history = [
      control('pause', 800, 0), // no answer: it may or may not have run
      control('pause', 1_000, 503),
      control('pause', 1_200),
      control('pause', 1_600), // already paused: nothing changes
      control('resume', 2_500, 0),
      control('resume', 3_500),
      buy('a', 1_100, 1_210), // sent before any pause was answered 200
      buy('b', 2_600), // after the first resume was sent, which may have run
    ];
    h.orders = [row('a', 1_150), row('b', 2_602)];
    expect(pauseWindows(h.history, 'room')).toMatchObject([{ from: 1_220, to: 2_500 }]);
    expect(check(h).ok).toBe(true);
    h.orders.push(row('c', 2_499));
    expect(check(h).counterExample).toMatch(/^order o-c user c: sold at 2499\.0 ms/);
  });

  it('closes the window at a resume sent in the millisecond the pause was answered', () => {
    const history = [control('pause', 1_000), control('resume', 1_020)];
    expect(pauseWindows(history, 'room')).toMatchObject([{ from: 1_020, to: 1_020 }]);
  });

  it('fails a run whose pause was never answered 200: it proved nothing', () => {
    const h = healthy();
    h.history = h.history.map((e) =>
      e.type === 'control' && e.action === 'pause' ? { ...e, status: 503 } : e,
    );
    expect(check(h)).toMatchObject({
      ok: false,
      counterExample: 'no pause of room was answered 200: the run never paused it for certain',
    });
  });

  it('passes a history without any control (a product nobody paused)', () => {
    expect(check({ history: [buy('a', 100)], orders: [row('a', 101)] })).toEqual({
      name: 'no-sale-while-paused',
      ok: true,
    });
  });

  it('reads 503 sale-paused as a refusal (nothing ran) that does not settle its key, another 503 as unknown', () => {
    expect(purchaseOutcome(503, 'sale-paused')).toBe('fail');
    expect(purchaseOutcome(503, 'store-unavailable')).toBe('unknown');
    expect(settlesKey(refused('a', 100))).toBe(false);
    expect(settlesKey({ ...refused('a', 100), status: 409, code: 'sold-out' })).toBe(true);
    expect(settlesKey(buy('a', 100))).toBe(true);
  });
});
