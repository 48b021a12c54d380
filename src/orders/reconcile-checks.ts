/**
 * Reconciliation's checks over what it read (reconcile-cut.ts): the orders inside the cut, each
 * in its buyer's marker or claim; what each persisted order still holds or gave back; the unit
 * equations, whole and per segment; and, on a still sale, the markers' own totals. A sale a
 * segment lost is named as it is found (`found.lost`), not reported as a mismatch.
 */
import { streamIdMs, type ProductMeta } from '../inventory/index.js';
import { returnable, type Cut, type Found } from './reconcile-cut.js';

/** Problems listed in full; past this many, a count. */
const MAX_LISTED = 20;

export class Problems {
  readonly list: string[] = [];

  add(text: string): void {
    if (this.list.length < MAX_LISTED) this.list.push(text);
    else if (this.list.length === MAX_LISTED) this.list.push('... more problems not listed');
  }
}

type Sold = { userId: string; quantity: number; outboxId: string; segment: number };

/** The orders inside the cut: its rows, and the sales only an outbox holds yet. */
export interface InCut {
  orders: Map<string, Sold>;
  /** units sold and still only in an outbox */
  pending: number;
  persisted: number;
  buyers: Set<string>;
  /** user -> units of their orders that their marker lists */
  markedUnits: Map<string, number>;
}

export function ordersInCut(cut: Cut, found: Found): InCut {
  const orders = new Map<string, Sold>();
  for (const row of found.rows) {
    orders.set(row.id, {
      userId: row.user_id,
      quantity: row.quantity,
      outboxId: row.outbox_id,
      segment: row.segment,
    });
  }
  let pending = 0;
  for (const o of cut.outbox.values()) {
    if (orders.has(o.orderId)) continue; // committed, its outbox delete still to come
    pending += o.quantity;
    orders.set(o.orderId, { ...o, outboxId: o.outboxId });
  }
  const persisted = found.rows.reduce((a, r) => a + r.quantity, 0);
  return { orders, pending, persisted, buyers: new Set(), markedUnits: new Map() };
}

/** Every order of the cut is in its buyer's marker (or an open claim), and in no one else's. */
export function checkMarkers(cut: Cut, found: Found, inCut: InCut, problems: Problems): void {
  for (const [id, o] of inCut.orders) {
    inCut.buyers.add(o.userId);
    if (cut.marked.has(id)) {
      inCut.markedUnits.set(o.userId, (inCut.markedUnits.get(o.userId) ?? 0) + o.quantity);
    }
    // While the sale runs, only orders sold before the first segment was read are sure to have
    // their marker (or claim) inside the cut.
    if (found.live && streamIdMs(o.outboxId) >= cut.startedMs) continue;
    const owner = cut.marked.get(id) ?? cut.claimed.get(id);
    const row = found.rowById.get(id);
    // a returned order leaves its buyer's marker (RETURN_FREES_LIMIT)
    if (owner === undefined && returnable(row?.status)) continue;
    if (owner === undefined && row) {
      // persisted, yet no marker or claim: a home sale its segment lost after it was
      // acknowledged. A spill's home lost only the buyer's marker: its unit's segment tells
      // whether the sale is lost (the spill record, in unitsHeld)
      if (row.segment === row.home_segment)
        found.lost.set(id, { orderId: id, segment: row.segment, quantity: row.quantity });
    } else if (owner === undefined)
      problems.add(`order ${id} of ${o.userId} is in no buyer marker or claim`);
    else if (owner !== o.userId) problems.add(`order ${id} of ${o.userId} is marked for ${owner}`);
  }
}

/** Persisted units still sold, by the state of their order. */
export interface Held {
  final: number;
  awaitingPayment: number;
  paid: number;
  /** cancelled, expired or refunded, their return not made yet */
  returning: number;
  /** refunded after their sale ended: kept sold */
  refunded: number;
  disputed: number;
  disputeLost: number;
}

/** What the persisted orders of the cut hold, by state, and what they gave back. */
export interface Units {
  held: Held;
  returned: number;
  returnedBySegment: number[];
}

/** Each persisted order's units: held (by state), or returned as its restock recorded. */
export function unitsHeld(cut: Cut, found: Found, problems: Problems): Units {
  const held: Held = {
    final: 0,
    awaitingPayment: 0,
    paid: 0,
    returning: 0,
    refunded: 0,
    disputed: 0,
    disputeLost: 0,
  };
  let returned = 0;
  const returnedBySegment = new Array<number>(cut.cutIds.length).fill(0);
  for (const r of found.rows) {
    const back = cut.returnedOrders.get(r.id);
    const closed = returnable(r.status);
    // A spill's home marker is on another segment, maybe another master, that the failover left
    // alone: only the unit's segment can tell. Exact even live: the row is inside that segment's
    // cut, and its deduct wrote the record in the same call (its return swaps it for `returned`),
    // if its epoch records spills: one an older version seeded has sales with no record.
    const spillGone =
      r.segment !== r.home_segment &&
      cut.recordsSpills[r.segment] === true &&
      back === undefined &&
      !cut.spilled.has(r.id);
    if (spillGone && !closed) {
      found.lost.set(r.id, { orderId: r.id, segment: r.segment, quantity: r.quantity });
    }
    if (
      closed &&
      (back === 0 ||
        spillGone ||
        (back === undefined &&
          r.segment === r.home_segment &&
          !cut.marked.has(r.id) &&
          !cut.claimed.has(r.id) &&
          !(found.live && streamIdMs(r.outbox_id) >= cut.startedMs)))
    ) {
      // lost, closed: its restock found the sale gone (lua/restock-3.lua), or its segment holds
      // neither its marker (a spill: its record) nor its return (a return frees either only after
      // recording itself): the failover took the sale, and any return that ran, with it
      found.lost.set(r.id, {
        orderId: r.id,
        segment: r.segment,
        quantity: r.quantity,
        closed: true,
      });
    } else if (back !== undefined) {
      // the restock ran before this cut; only a cancel, an expiry or a refund may have asked for it
      if (!closed) problems.add(`order ${r.id} is ${r.status}, yet its units were returned`);
      if (back !== r.quantity) problems.add(`order ${r.id} holds ${r.quantity}, ${back} returned`);
      returned += back;
      returnedBySegment[r.segment] = (returnedBySegment[r.segment] ?? 0) + back;
    } else if (r.status === 'final') held.final += r.quantity;
    else if (r.status === 'awaiting_payment') held.awaitingPayment += r.quantity;
    else if (r.status === 'paid') held.paid += r.quantity;
    else if (r.status === 'disputed') held.disputed += r.quantity;
    else if (r.status === 'dispute_lost') held.disputeLost += r.quantity;
    else if (r.status === 'refunded' && r.units_kept_at !== null) held.refunded += r.quantity;
    else held.returning += r.quantity;
  }
  return { held, returned, returnedBySegment };
}

/** The unit equations: the whole product's, then each segment's sold and returned units. */
export function balance(
  meta: ProductMeta,
  cut: Cut,
  found: Found,
  inCut: InCut,
  units: Units,
  problems: Problems,
): void {
  const segments = meta.segments;
  // a lost sale counts twice: persisted, and back in stock (the failover); named once, after
  const lostAt = new Array<number>(segments).fill(0);
  for (const l of found.lost.values())
    if (!found.afterCut.has(l.orderId)) lostAt[l.segment] = (lostAt[l.segment] ?? 0) + l.quantity;
  const lostUnits = lostAt.reduce((a, n) => a + n, 0);
  const { remaining } = cut;
  const { pending, persisted } = inCut;
  if (remaining + pending + persisted - units.returned !== meta.total + cut.added + lostUnits) {
    const added =
      (cut.putOn ? ` + added ${cut.putOn}` : '') + (cut.takenOff ? ` - taken ${cut.takenOff}` : '');
    problems.add(
      `units: seeded ${meta.total}${added} != remaining ${remaining} + pending ${pending} + persisted ` +
        `${persisted} - returned ${units.returned}`,
    );
  }
  const soldBySegment = new Array<number>(segments).fill(0);
  for (const o of inCut.orders.values())
    soldBySegment[o.segment] = (soldBySegment[o.segment] ?? 0) + o.quantity;
  for (let seg = 0; seg < segments; seg++) {
    if (soldBySegment[seg] !== cut.soldAt[seg]! + lostAt[seg]!) {
      problems.add(
        `segment ${seg}: sold ${cut.soldAt[seg]}, its orders hold ${soldBySegment[seg]}`,
      );
    }
    if (units.returnedBySegment[seg] !== cut.returnedAt[seg]) {
      problems.add(
        `segment ${seg}: returned ${cut.returnedAt[seg]}, its returned orders hold ` +
          `${units.returnedBySegment[seg]}`,
      );
    }
  }
}

/** On a still sale: every order a marker lists exists, and each marker's units are its orders'. */
export function checkMarkerTotals(cut: Cut, inCut: InCut, problems: Problems): void {
  for (const [id, user] of cut.marked) {
    if (!inCut.orders.has(id))
      problems.add(`marker of ${user} lists order ${id}, which does not exist`);
  }
  for (const [user, units] of cut.markerUnits) {
    const found = inCut.markedUnits.get(user) ?? 0;
    if (found !== units)
      problems.add(`marker of ${user} says ${units} units, its orders hold ${found}`);
  }
}
