/**
 * The order events' invariants, from what the flaky receiver got (DeliveryOp in the history) and
 * the order rows after the settle phase; pure functions, so made-up histories can prove they fail
 * (test/chaos/chaos-event-checks.test.ts):
 *
 * - `events-complete`: every order's final state (its row's version and status) was acknowledged
 *   by the receiver;
 * - `events-ordered`: per order, the versions the receiver acknowledged, after dedup by event id,
 *   never go back;
 * - `events-no-phantom`: no event names an order that has no row, or arrived before the row had
 *   that version (an event sent before its commit).
 */
import type { DeliveryOp, HistoryEntry, InvariantResult, OrderRow } from './history.js';

/** The order events delivered: a product event (a draw's) names no order; the draw's checks are its own. */
const deliveries = (history: HistoryEntry[]) =>
  history
    .filter((h): h is DeliveryOp => h.type === 'delivery' && h.eventType.startsWith('order.'))
    .sort((a, b) => a.op - b.op);

const acknowledged = (d: DeliveryOp) => d.answered >= 200 && d.answered < 300;

/** The status an event of the row's final version carries (GET /orders/:id's words). */
const shownStatus = (o: OrderRow) => (o.status === 'final' ? 'persisted' : o.status);

export function eventsComplete(history: HistoryEntry[], orders: OrderRow[]): InvariantResult {
  const acked = new Map<string, DeliveryOp>();
  for (const d of deliveries(history)) if (acknowledged(d)) acked.set(d.id, d);
  const byOrder = new Map<string, DeliveryOp[]>();
  for (const d of acked.values()) byOrder.set(d.orderId, [...(byOrder.get(d.orderId) ?? []), d]);
  for (const o of orders) {
    const last = (byOrder.get(o.id) ?? []).find((d) => d.version === o.version);
    if (!last)
      return {
        name: 'events-complete',
        ok: false,
        counterExample: `order ${o.id} (user ${o.user}, ${o.product}) ends ${o.status} at version ${o.version}: no acknowledged event of that version (got ${(byOrder.get(o.id) ?? []).map((d) => d.version).join(', ') || 'none'})`,
      };
    if (last.status !== shownStatus(o))
      return {
        name: 'events-complete',
        ok: false,
        counterExample: `order ${o.id}: its version ${o.version} event says ${last.status}, the row ${o.status}`,
      };
  }
  return { name: 'events-complete', ok: true };
}

export function eventsOrdered(history: HistoryEntry[]): InvariantResult {
  const seen = new Set<string>();
  const last = new Map<string, DeliveryOp>();
  for (const d of deliveries(history)) {
    if (!acknowledged(d) || seen.has(d.id)) continue;
    seen.add(d.id);
    const before = last.get(d.orderId);
    if (before && d.version <= before.version)
      return {
        name: 'events-ordered',
        ok: false,
        counterExample: `order ${d.orderId}: ${d.id} (version ${d.version}) acknowledged after ${before.id} (version ${before.version})`,
      };
    last.set(d.orderId, d);
  }
  return { name: 'events-ordered', ok: true };
}

export function eventsNoPhantom(history: HistoryEntry[], orders: OrderRow[]): InvariantResult {
  const rows = new Set(orders.map((o) => o.id));
  for (const d of deliveries(history)) {
    if (!rows.has(d.orderId))
      return {
        name: 'events-no-phantom',
        ok: false,
        counterExample: `${d.id} (${d.eventType}) names order ${d.orderId}, which has no row`,
      };
    if (d.rowVersion === undefined) continue; // unread: the receiver answered 503
    if (d.rowVersion === null || d.rowVersion < d.version)
      return {
        name: 'events-no-phantom',
        ok: false,
        counterExample: `${d.id} (${d.eventType}, version ${d.version}) arrived when the row was ${d.rowVersion === null ? 'not there' : `at version ${d.rowVersion}`}`,
      };
  }
  return { name: 'events-no-phantom', ok: true };
}

export function checkEvents(history: HistoryEntry[], orders: OrderRow[]): InvariantResult[] {
  return [
    eventsComplete(history, orders),
    eventsOrdered(history),
    eventsNoPhantom(history, orders),
  ];
}
