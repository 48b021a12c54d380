/**
 * The chaos run's order-event invariants (load-tests/chaos/event-checks.ts) hold on a correct
 * made-up history and break, naming the first counter-example, on each made-up wrong one: a final
 * state never acknowledged, a version going back after dedup, an event of an order with no row,
 * an event that came before its row.
 */
import { describe, expect, it } from 'vitest';
import { checkEvents } from '../../load-tests/chaos/event-checks.js';
import type { DeliveryOp, HistoryEntry, OrderRow } from '../../load-tests/chaos/history.js';

let op = 0;
const event = (
  orderId: string,
  version: number,
  eventType: string,
  status: string,
  answered = 204,
  rowVersion: number | null = version,
): DeliveryOp => ({
  type: 'delivery',
  op: op++,
  atMs: op,
  id: `evt_${orderId}_${version}`,
  orderId,
  version,
  eventType,
  status,
  answered,
  verified: true,
  rowVersion,
});

const row = (id: string, status: OrderRow['status'], version: number): OrderRow => ({
  id,
  idempotencyKey: `k-${id}`,
  product: 'p1',
  user: `u-${id}`,
  quantity: 1,
  status,
  restocks: status === 'cancelled' ? 1 : 0,
  version,
});

/** o1 paid (a 500 then the retry, and a duplicate), o2 cancelled and returned, o3 final. */
function healthy(): { history: HistoryEntry[]; orders: OrderRow[] } {
  op = 0;
  return {
    history: [
      event('o1', 1, 'order.created', 'awaiting_payment'),
      event('o2', 1, 'order.created', 'awaiting_payment'),
      event('o1', 2, 'order.paid', 'paid', 500),
      event('o3', 1, 'order.created', 'persisted', 0),
      event('o1', 2, 'order.paid', 'paid'),
      event('o3', 1, 'order.created', 'persisted'),
      event('o2', 2, 'order.cancelled', 'cancelled'),
      // a replay or a lost 2xx: the same id again, after later versions
      event('o1', 1, 'order.created', 'awaiting_payment'),
      event('o2', 3, 'order.returned', 'cancelled'),
    ],
    orders: [row('o1', 'paid', 2), row('o2', 'cancelled', 3), row('o3', 'final', 1)],
  };
}

const verdicts = (h: { history: HistoryEntry[]; orders: OrderRow[] }) =>
  Object.fromEntries(checkEvents(h.history, h.orders).map((r) => [r.name, r]));

describe('the order-event invariants', () => {
  it('hold on a correct history (retries, a duplicate id, several orders interleaved)', () => {
    const v = verdicts(healthy());
    expect(Object.values(v).map((r) => [r.name, r.ok])).toEqual([
      ['events-complete', true],
      ['events-ordered', true],
      ['events-no-phantom', true],
    ]);
  });

  it("events-complete breaks when an order's final state was never acknowledged", () => {
    const h = healthy();
    // o2's return only ever got a 500
    h.history = h.history.map((e) =>
      e.type === 'delivery' && e.id === 'evt_o2_3' ? { ...e, answered: 500 } : e,
    );
    const r = verdicts(h)['events-complete']!;
    expect(r.ok).toBe(false);
    expect(r.counterExample).toMatch(
      /order o2 .* ends cancelled at version 3: no acknowledged event of that version \(got 1, 2\)/,
    );
  });

  it('events-complete breaks when the final event says another status than the row', () => {
    const h = healthy();
    h.orders = h.orders.map((o) => (o.id === 'o3' ? { ...o, status: 'paid' } : o));
    expect(verdicts(h)['events-complete']!.counterExample).toMatch(
      /o3: its version 1 event says persisted, the row paid/,
    );
  });

  it('events-ordered breaks when a version goes back after dedup (an overtaking retry)', () => {
    const h = healthy();
    // o1's created event first acknowledged only after its paid event
    h.history = h.history.filter((e) => !(e.type === 'delivery' && e.op === 0));
    const r = verdicts(h)['events-ordered']!;
    expect(r.ok).toBe(false);
    expect(r.counterExample).toBe(
      'order o1: evt_o1_1 (version 1) acknowledged after evt_o1_2 (version 2)',
    );
  });

  it('events-no-phantom breaks on an event of an order without a row', () => {
    const h = healthy();
    h.history.push(event('o9', 1, 'order.created', 'persisted', 500, null));
    const r = verdicts(h)['events-no-phantom']!;
    expect(r.ok).toBe(false);
    expect(r.counterExample).toBe('evt_o9_1 (order.created) names order o9, which has no row');
  });

  it("leave out a product event (a draw's): it names no order", () => {
    const h = healthy();
    h.history.push({ ...event('chaos-draw/draws/1', 1, 'draw.frozen', 'persisted', 204, null) });
    const v = verdicts(h);
    expect(Object.values(v).map((r) => [r.name, r.ok])).toEqual([
      ['events-complete', true],
      ['events-ordered', true],
      ['events-no-phantom', true],
    ]);
  });

  it('events-no-phantom leaves out an arrival whose row the receiver could not read (it answered 503)', () => {
    const h = healthy();
    const unread = event('o1', 2, 'order.paid', 'paid', 503);
    delete unread.rowVersion;
    h.history.push(unread);
    expect(verdicts(h)['events-no-phantom']!.ok).toBe(true);
  });

  it('events-no-phantom breaks on an event that came before its row had that version', () => {
    const h = healthy();
    h.history.push(event('o1', 2, 'order.paid', 'paid', 204, 1));
    expect(verdicts(h)['events-no-phantom']!.counterExample).toBe(
      'evt_o1_2 (order.paid, version 2) arrived when the row was at version 1',
    );
  });
});
