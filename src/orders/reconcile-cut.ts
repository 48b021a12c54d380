/**
 * What reconciliation reads (reconcile.ts says why in this order): the cut, each segment's state,
 * markers, claims, returns, spill records and outbox read atomically, one segment after another;
 * then the epoch's order rows, and the outboxes' newest ids once more, which tell the rows sold
 * after the cut from the sales a segment lost.
 */
import {
  splitStock,
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
    ordersOf(productId: string, epoch: number): Promise<ReadRow[]>;
  };
}

/** A persisted order as reconciliation reads it. */
export type ReadRow = Pick<
  OrderRow,
  | 'id'
  | 'user_id'
  | 'quantity'
  | 'segment'
  | 'home_segment'
  | 'outbox_id'
  | 'status'
  | 'restocked_at'
  | 'units_kept_at'
>;

/**
 * An order persisted whose sale its segment no longer holds: newer than anything its outbox ever
 * had. Only lost writes do that (a failover to a replica that had not received them, an AOF cut
 * short): its units count as stock again, so the sale could sell them twice.
 */
export interface Lost {
  orderId: string;
  segment: number;
  quantity: number;
  /** cancelled, expired or refunded since: its return found the sale gone and added nothing */
  closed?: true;
}

/** The Redis side of the cut, every segment's. */
export interface Cut {
  remaining: number;
  /** units operators added (or withdrew: negative) this epoch, net, every segment's */
  added: number;
  /** of which: units operators put on sale, and units they took off (both >= 0) */
  putOn: number;
  takenOff: number;
  /** the epoch's orders still in an outbox */
  outbox: Map<string, SoldOrder>;
  /** orderId -> user whose marker lists it */
  marked: Map<string, string>;
  /** orderId -> user with an open spill claim for it (the order may not exist yet) */
  claimed: Map<string, string>;
  /** user -> the units their marker says */
  markerUnits: Map<string, number>;
  /** per segment: the newest outbox id at its cut */
  cutIds: string[];
  /** per segment, from its state hash: units sold and returned there */
  soldAt: number[];
  returnedAt: number[];
  /** orderId -> units its segment's restock recorded as returned (older epochs' ones too) */
  returnedOrders: Map<string, number>;
  /** spill sales their unit's segment holds (lua/deduct-7.lua), every segment's */
  spilled: Set<string>;
  /** per segment: its epoch records every spill (an older version's seed did not) */
  recordsSpills: boolean[];
  /** when the first segment was read (ms) */
  startedMs: number;
}

/** Reads each segment's cut in turn, checking its state against its seeded share (+ added). */
export async function readCut(
  store: ReconcileSources['store'],
  productId: string,
  meta: ProductMeta,
  problem: (text: string) => void,
): Promise<Cut> {
  const { epoch, segments } = meta;
  const cut: Cut = {
    remaining: 0,
    added: 0,
    putOn: 0,
    takenOff: 0,
    outbox: new Map(),
    marked: new Map(),
    claimed: new Map(),
    markerUnits: new Map(),
    cutIds: [],
    soldAt: [],
    returnedAt: [],
    returnedOrders: new Map(),
    spilled: new Set(),
    recordsSpills: [],
    startedMs: Infinity,
  };
  /** each segment's seeded units */
  const shares = splitStock(meta.total, segments);
  for (let seg = 0; seg < segments; seg++) {
    const snap = await store.segmentSnapshot(productId, seg);
    cut.cutIds.push(snap.cut);
    cut.startedMs = Math.min(cut.startedMs, snap.atMs);
    const { stock, epoch: segEpoch, sold, returned } = snap.state;
    if (Number(segEpoch) !== epoch) {
      problem(`segment ${seg} is at epoch ${segEpoch}, not ${epoch}`);
    }
    if (Number(stock) < 0) problem(`segment ${seg} has negative stock ${stock}`);
    cut.remaining += Number(stock ?? 0);
    cut.soldAt.push(Number(sold ?? 0));
    cut.returnedAt.push(Number(returned ?? 0));
    const addedHere = Number(snap.state.added ?? 0); // operators' net change (lua/dropUnits-1.lua)
    cut.added += addedHere;
    // an epoch an older version seeded kept the net only: read it as all put on, or all taken off
    const takenHere =
      snap.state.taken === null ? Math.max(0, -addedHere) : Number(snap.state.taken);
    cut.takenOff += takenHere;
    cut.putOn += addedHere + takenHere;
    if (Number(stock ?? 0) + cut.soldAt[seg]! - cut.returnedAt[seg]! !== shares[seg]! + addedHere) {
      problem(
        `segment ${seg}: seeded ${shares[seg]}` +
          (addedHere + takenHere ? ` + added ${addedHere + takenHere}` : '') +
          (takenHere ? ` - taken ${takenHere}` : '') +
          ' != ' +
          `stock ${stock} + sold ${sold} - returned ${returned ?? 0}`,
      );
    }
    for (const [id, units] of snap.returnedOrders) cut.returnedOrders.set(id, units);
    for (const id of snap.spilled) cut.spilled.add(id);
    cut.recordsSpills.push(snap.recordsSpills);
    for (const [user, marker] of snap.markers) {
      // carried-in units (an earlier epoch's purchases) have no order of this epoch
      cut.markerUnits.set(user, marker.units - (marker.carried ?? 0));
      for (const id of marker.orderIds) cut.marked.set(id, user);
    }
    for (const [user, claim] of snap.claims) cut.claimed.set(claim.orderId, user);
    for (const o of snap.outbox) {
      if (o.epoch === epoch) cut.outbox.set(o.orderId, o);
    }
  }
  return cut;
}

/** The rows of the epoch, as the cut sees them. */
export interface Found {
  /** every row of the epoch */
  all: ReadRow[];
  /** the rows inside the cut (a lost one too) */
  rows: ReadRow[];
  rowById: Map<string, ReadRow>;
  /** rows sold after their segment was read, left out of this cut */
  afterCut: Set<string>;
  /** sales happened while reconciling (marker checks limited to earlier orders) */
  live: boolean;
  /** orderId -> what a segment lost of it (more are found by the checks) */
  lost: Map<string, Lost>;
}

/** Reads the epoch's rows after the cut, and tells the rows sold after it from the lost ones. */
export async function readRows(
  deps: ReconcileSources,
  productId: string,
  meta: ProductMeta,
  cut: Cut,
): Promise<Found> {
  const all = await deps.rows.ordersOf(productId, meta.epoch);
  const newest = await deps.store.lastOutboxIds(productId, meta.segments);
  const live = newest.some((id, i) => id !== cut.cutIds[i]);
  const lost = new Map<string, Lost>();
  // Read after the rows: a row's entry was in its outbox before the row was written, so a row
  // newer than its outbox's newest id is a sale the segment has lost.
  for (const r of all) {
    if (compareIds(r.outbox_id, newest[r.segment] ?? '0-0') > 0) {
      const closed = returnable(r.status);
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
  const rows: ReadRow[] = [];
  const afterCut = new Set<string>();
  for (const r of all) {
    if (compareIds(r.outbox_id, cut.cutIds[r.segment] ?? '0-0') <= 0 || lost.has(r.id))
      rows.push(r);
    else afterCut.add(r.id);
  }
  return { all, rows, rowById: new Map(all.map((r) => [r.id, r])), afterCut, live, lost };
}

/** An order whose units may be returned: cancelled, expired, or refunded (while its sale runs). */
export const returnable = (status: string | undefined) =>
  status === 'cancelled' || status === 'expired' || status === 'refunded';

/** `ms-seq` stream ids compared as numbers. */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am - bm : as - bs;
}
