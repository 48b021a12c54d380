/**
 * Reconciliation of one product's current epoch: proves no unit was lost or sold twice.
 *
 *   seeded + added (by operators) = remaining stock + pending outbox + persisted - returned units
 *   persisted - returned = final + awaiting_payment + paid + returning (closed, not yet back)
 *   per segment: seeded share + added = stock + sold - returned; sold = the units of its orders;
 *                returned = the units of its cancelled / expired orders its restock recorded
 *   every buyer marker lists exactly the shopper's orders, and every order is in its marker
 *   (or in an open spill claim, while a purchase is completing)
 *   every spill sale is in the spilled hash of the segment that gave its unit, until returned
 *
 * The cut: each segment's stock, markers, claims, outbox and last outbox id are read in one MULTI
 * (atomic per segment); PostgreSQL is read after every segment, and rows whose outbox id is past
 * their segment's cut (sold after it was read) are left out. The worker deletes an outbox entry
 * only after its row is committed, so an order inside the cut is seen in the outbox, in
 * PostgreSQL, or in both (counted once); never in neither. The units equation is therefore exact
 * even while the sale runs. Marker checks need a still sale (a spill touches two segments read at
 * different moments): while sales happen during the reconciliation they cover only the orders
 * sold before it began, and the report says `live: true`.
 */
import {
  splitStock,
  compareStreamIds,
  streamIdMs,
  type ProductMeta,
  type SegmentSnapshot,
  type SoldOrder,
} from '../inventory/index.js';
import type { OrderRow } from './repository.js';

/** What reconciliation reads: Redis through inventory's OrderStore, the rows through the repository. */
export interface ReconcileSources {
  store: {
    readMeta(productId: string): Promise<ProductMeta | null>;
    /** one segment's cut, read atomically (segment-snapshot.ts) */
    segmentSnapshot(productId: string, segment: number): Promise<SegmentSnapshot>;
    lastOutboxIds(productId: string, segments: number): Promise<string[]>;
  };
  rows: {
    ordersOf(
      productId: string,
      epoch: number,
    ): Promise<
      Array<
        Pick<
          OrderRow,
          | 'id'
          | 'user_id'
          | 'quantity'
          | 'segment'
          | 'home_segment'
          | 'outbox_id'
          | 'status'
          | 'restocked_at'
        >
      >
    >;
  };
}

export interface ReconcileReport {
  productId: string;
  epoch: number;
  /** units on sale this epoch: the seeded total plus `added`, the operators' net change */
  total: number;
  added: number;
  remaining: number;
  /** units sold and still only in an outbox */
  pending: number;
  persisted: number;
  persistedOrders: number;
  /** units of cancelled and expired orders back on sale (counted in `remaining` again) */
  returned: number;
  /** persisted units still sold, by order state (a final sale has no payment window) */
  held: { final: number; awaitingPayment: number; paid: number; returning: number };
  distinctBuyers: number;
  openClaims: number;
  /** sales happened while reconciling (marker checks limited to earlier orders) */
  live: boolean;
  /** order rows sold after their segment was read, left out of this cut */
  afterCut: number;
  /**
   * Orders persisted whose sale their segment no longer holds: newer than anything its outbox
   * ever had. Only lost writes do that (a failover to a replica that had not received them, an
   * AOF cut short): their units count as stock again, so the sale could sell them twice.
   */
  lostWrites: Array<{
    orderId: string;
    segment: number;
    quantity: number;
    /** cancelled or expired since: its return found the sale gone and added nothing */
    closed?: true;
  }>;
  /** empty when everything adds up */
  problems: string[];
  ok: boolean;
}

/** Problems listed in full; past this many, a count. */
const MAX_LISTED = 20;

export async function reconcile(
  deps: ReconcileSources,
  productId: string,
  /** test hook: runs between reading Redis and reading PostgreSQL (widens the race window) */
  hooks: { beforeDbRead?: () => Promise<unknown> } = {},
): Promise<ReconcileReport | null> {
  const meta = await deps.store.readMeta(productId);
  if (!meta) return null;
  const { epoch, segments } = meta;
  const problems: string[] = [];
  const problem = (text: string) => {
    if (problems.length < MAX_LISTED) problems.push(text);
    else if (problems.length === MAX_LISTED) problems.push('... more problems not listed');
  };

  let remaining = 0;
  const outbox = new Map<string, SoldOrder>();
  /** orderId -> user whose marker lists it */
  const marked = new Map<string, string>();
  /** orderId -> user with an open spill claim for it (the order may not exist yet) */
  const claimed = new Map<string, string>();
  const markerUnits = new Map<string, number>();
  /** per segment: the newest outbox id at its cut */
  const cut: string[] = [];
  /** per segment, from its state hash: units sold and returned there */
  const soldAt: number[] = [];
  const returnedAt: number[] = [];
  /** orderId -> units its segment's restock recorded as returned (older epochs' ones too) */
  const returnedOrders = new Map<string, number>();
  /** spill sales their unit's segment holds (lua/deduct-7.lua), every segment's */
  const spilled = new Set<string>();
  /** per segment: its epoch records every spill (an older version's seed did not) */
  const recordsSpills: boolean[] = [];
  let startedMs = Infinity;
  const shares = splitStock(meta.total, segments); // each segment's seeded units
  let added = 0;
  for (let seg = 0; seg < segments; seg++) {
    const snap = await deps.store.segmentSnapshot(productId, seg);
    cut.push(snap.cut);
    startedMs = Math.min(startedMs, snap.atMs);
    const { stock, epoch: segEpoch, sold, returned } = snap.state;
    const addedHere = Number(snap.state.added ?? 0); // operators' net change (lua/dropUnits-1.lua)
    if (Number(segEpoch) !== epoch) problem(`segment ${seg} is at epoch ${segEpoch}, not ${epoch}`);
    if (Number(stock) < 0) problem(`segment ${seg} has negative stock ${stock}`);
    remaining += Number(stock ?? 0);
    soldAt.push(Number(sold ?? 0));
    returnedAt.push(Number(returned ?? 0));
    const share = shares[seg]! + addedHere;
    added += addedHere;
    if (Number(stock ?? 0) + soldAt[seg]! - returnedAt[seg]! !== share) {
      problem(
        `segment ${seg}: seeded ${shares[seg]}${addedHere ? ` + added ${addedHere}` : ''} != stock ${stock} + sold ${sold} - returned ${returned ?? 0}`,
      );
    }
    for (const [id, units] of snap.returnedOrders) returnedOrders.set(id, units);
    for (const id of snap.spilled) spilled.add(id);
    recordsSpills.push(snap.recordsSpills);
    for (const [user, marker] of snap.markers) {
      // carried-in units (an earlier epoch's purchases) have no order of this epoch
      markerUnits.set(user, marker.units - (marker.carried ?? 0));
      for (const id of marker.orderIds) marked.set(id, user);
    }
    for (const [user, claim] of snap.claims) claimed.set(claim.orderId, user);
    for (const o of snap.outbox) {
      if (o.epoch === epoch) outbox.set(o.orderId, o);
    }
  }

  await hooks.beforeDbRead?.();
  const all = await deps.rows.ordersOf(productId, epoch);
  const newest = await deps.store.lastOutboxIds(productId, segments);
  const live = newest.some((id, i) => id !== cut[i]);
  const rowById = new Map(all.map((r) => [r.id, r]));
  /** orderId -> what a segment lost of it (see ReconcileReport.lostWrites) */
  const lost = new Map<string, ReconcileReport['lostWrites'][number]>();
  // Read after the rows: a row's entry was in its outbox before the row was written, so a row
  // newer than its outbox's newest id is a sale the segment has lost.
  for (const r of all) {
    if (compareStreamIds(r.outbox_id, newest[r.segment] ?? '0-0') > 0) {
      const closed = r.status === 'cancelled' || r.status === 'expired';
      lost.set(r.id, {
        orderId: r.id,
        segment: r.segment,
        quantity: r.quantity,
        ...(closed && { closed }),
      });
    }
  }
  // A lost row is past its segment's cut yet was not sold after it: it belongs to the cut (its
  // units counted sold and, by the failover, in stock again), or the sums would miss it.
  const rows: typeof all = [];
  const afterCut = new Set<string>();
  for (const r of all) {
    if (compareStreamIds(r.outbox_id, cut[r.segment] ?? '0-0') <= 0 || lost.has(r.id)) rows.push(r);
    else afterCut.add(r.id);
  }
  type Sold = { userId: string; quantity: number; outboxId: string; segment: number };
  const orders = new Map<string, Sold>();
  for (const row of rows) {
    orders.set(row.id, {
      userId: row.user_id,
      quantity: row.quantity,
      outboxId: row.outbox_id,
      segment: row.segment,
    });
  }
  let pending = 0;
  for (const o of outbox.values()) {
    if (orders.has(o.orderId)) continue; // committed, its outbox delete still to come
    pending += o.quantity;
    orders.set(o.orderId, { ...o, outboxId: o.outboxId });
  }
  const markedUnits = new Map<string, number>();
  const buyers = new Set<string>();
  for (const [id, o] of orders) {
    buyers.add(o.userId);
    if (marked.has(id)) markedUnits.set(o.userId, (markedUnits.get(o.userId) ?? 0) + o.quantity);
    // While the sale runs, only orders sold before the first segment was read are sure to have
    // their marker (or claim) inside the cut.
    if (live && streamIdMs(o.outboxId) >= startedMs) continue;
    const owner = marked.get(id) ?? claimed.get(id);
    const row = rowById.get(id);
    // a cancelled or expired order leaves its buyer's marker when returned (RETURN_FREES_LIMIT)
    if (owner === undefined && (row?.status === 'cancelled' || row?.status === 'expired')) continue;
    if (owner === undefined && row) {
      // persisted, yet no marker or claim: a home sale its segment lost after it was
      // acknowledged. A spill's home lost only the buyer's marker: its unit's segment tells
      // whether the sale is lost (the spill record, below)
      if (row.segment === row.home_segment)
        lost.set(id, { orderId: id, segment: row.segment, quantity: row.quantity });
    } else if (owner === undefined)
      problem(`order ${id} of ${o.userId} is in no buyer marker or claim`);
    else if (owner !== o.userId) problem(`order ${id} of ${o.userId} is marked for ${owner}`);
  }
  const persisted = rows.reduce((a, r) => a + r.quantity, 0);
  const held = { final: 0, awaitingPayment: 0, paid: 0, returning: 0 };
  let returned = 0;
  const returnedBySegment = new Array<number>(segments).fill(0);
  for (const r of rows) {
    const back = returnedOrders.get(r.id);
    const closed = r.status === 'cancelled' || r.status === 'expired';
    // A spill's home marker is on another segment, maybe another master, that the failover left
    // alone: only the unit's segment can tell. Exact even live: the row is inside that segment's
    // cut, and its deduct wrote the record in the same call (its return swaps it for `returned`),
    // if its epoch records spills: one an older version seeded has sales with no record.
    const spillGone =
      r.segment !== r.home_segment &&
      recordsSpills[r.segment] === true &&
      back === undefined &&
      !spilled.has(r.id);
    if (spillGone && !closed) {
      lost.set(r.id, { orderId: r.id, segment: r.segment, quantity: r.quantity });
    }
    if (
      closed &&
      (back === 0 ||
        spillGone ||
        (back === undefined &&
          r.segment === r.home_segment &&
          !marked.has(r.id) &&
          !claimed.has(r.id) &&
          !(live && streamIdMs(r.outbox_id) >= startedMs)))
    ) {
      // lost, closed: its restock found the sale gone (lua/restock-3.lua), or its segment holds
      // neither its marker (a spill: its record) nor its return (a return frees either only after
      // recording itself): the failover took the sale, and any return that ran, with it
      lost.set(r.id, { orderId: r.id, segment: r.segment, quantity: r.quantity, closed: true });
    } else if (back !== undefined) {
      // the restock ran before this cut; only a cancel or an expiry may have asked for it
      if (r.status !== 'cancelled' && r.status !== 'expired') {
        problem(`order ${r.id} is ${r.status}, yet its units were returned`);
      }
      if (back !== r.quantity) problem(`order ${r.id} holds ${r.quantity}, ${back} returned`);
      returned += back;
      returnedBySegment[r.segment] = (returnedBySegment[r.segment] ?? 0) + back;
    } else if (r.status === 'final') held.final += r.quantity;
    else if (r.status === 'awaiting_payment') held.awaitingPayment += r.quantity;
    else if (r.status === 'paid') held.paid += r.quantity;
    else held.returning += r.quantity;
  }
  // a lost sale counts twice: persisted, and back in stock (the failover); named below, once
  const lostAt = new Array<number>(segments).fill(0);
  for (const l of lost.values())
    if (!afterCut.has(l.orderId)) lostAt[l.segment] = (lostAt[l.segment] ?? 0) + l.quantity;
  const lostUnits = lostAt.reduce((a, n) => a + n, 0);
  const total = meta.total + added;
  if (remaining + pending + persisted - returned !== total + lostUnits) {
    problem(
      `units: seeded ${meta.total}${added ? ` + added ${added}` : ''} != remaining ${remaining} + pending ${pending} + persisted ` +
        `${persisted} - returned ${returned}`,
    );
  }
  const soldBySegment = new Array<number>(segments).fill(0);
  for (const o of orders.values())
    soldBySegment[o.segment] = (soldBySegment[o.segment] ?? 0) + o.quantity;
  for (let seg = 0; seg < segments; seg++) {
    if (soldBySegment[seg] !== soldAt[seg]! + lostAt[seg]!) {
      problem(`segment ${seg}: sold ${soldAt[seg]}, its orders hold ${soldBySegment[seg]}`);
    }
    if (returnedBySegment[seg] !== returnedAt[seg]) {
      problem(
        `segment ${seg}: returned ${returnedAt[seg]}, its returned orders hold ${returnedBySegment[seg]}`,
      );
    }
  }

  if (!live) {
    for (const [id, user] of marked) {
      if (!orders.has(id)) problem(`marker of ${user} lists order ${id}, which does not exist`);
    }
    for (const [user, units] of markerUnits) {
      const found = markedUnits.get(user) ?? 0;
      if (found !== units)
        problem(`marker of ${user} says ${units} units, its orders hold ${found}`);
    }
  }

  const lostWrites = [...lost.values()];
  for (const l of lostWrites) {
    problem(
      `order ${l.orderId} (${l.quantity} unit(s), segment ${l.segment}) is persisted but its ` +
        'segment lost the sale (a failover, or an AOF cut short): its units count as stock again' +
        (l.closed ? '; closed since, its return added nothing' : ''),
    );
  }
  return {
    productId,
    epoch,
    total,
    added,
    remaining,
    pending,
    persisted,
    persistedOrders: rows.length,
    returned,
    held,
    distinctBuyers: buyers.size,
    openClaims: claimed.size,
    live,
    afterCut: afterCut.size,
    lostWrites,
    problems,
    ok: problems.length === 0,
  };
}
