/**
 * Reconciliation of one product's current epoch: proves no unit was lost or sold twice.
 *
 *   seeded + added (by operators) = remaining stock + pending outbox + persisted - returned units
 *   persisted - returned = final + awaiting_payment + paid + returning (closed or refunded, not
 *                          yet back) + refunded (after the sale's end: kept) + disputed + lost
 *   per segment: seeded share + added = stock + sold - returned; sold = the units of its orders;
 *                returned = the units of its cancelled, expired and refunded orders its restock
 *                recorded
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
import { readCut, readRows, type Lost, type ReconcileSources } from './reconcile-cut.js';
import {
  type Held,
  balance,
  checkMarkers,
  checkMarkerTotals,
  ordersInCut,
  Problems,
  unitsHeld,
} from './reconcile-checks.js';

export type { ReconcileSources } from './reconcile-cut.js';

export interface ReconcileReport {
  productId: string;
  epoch: number;
  /** units on sale this epoch: seeded + added - taken */
  total: number;
  /** the units the epoch was seeded with */
  seeded: number;
  /** units operators put on sale during the drop, and units they took off it (unsold ones) */
  added: number;
  taken: number;
  remaining: number;
  /** units sold and still only in an outbox */
  pending: number;
  persisted: number;
  persistedOrders: number;
  /** units of cancelled, expired and refunded orders back on sale (counted in `remaining` again) */
  returned: number;
  /** persisted units still sold, by order state (a final sale has no payment window) */
  held: Held;
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
  lostWrites: Lost[];
  /** empty when everything adds up */
  problems: string[];
  ok: boolean;
}

/**
 * Reconciles `productId`'s current epoch: the cut (Redis, segment by segment), the rows inside it
 * (PostgreSQL, read after), and the checks of the header, in that order.
 */
export async function reconcile(
  deps: ReconcileSources,
  productId: string,
  /** test hook: runs between reading Redis and reading PostgreSQL (widens the race window) */
  hooks: { beforeDbRead?: () => Promise<unknown> } = {},
): Promise<ReconcileReport | null> {
  const meta = await deps.store.readMeta(productId);
  if (!meta) return null;
  const problems = new Problems();
  const cut = await readCut(deps.store, productId, meta, (text) => problems.add(text));
  await hooks.beforeDbRead?.();
  const found = await readRows(deps, productId, meta, cut);
  const inCut = ordersInCut(cut, found);
  checkMarkers(cut, found, inCut, problems);
  const units = unitsHeld(cut, found, problems);
  balance(meta, cut, found, inCut, units, problems);
  if (!found.live) checkMarkerTotals(cut, inCut, problems);
  const lostWrites = [...found.lost.values()];
  for (const l of lostWrites) {
    problems.add(
      `order ${l.orderId} (${l.quantity} unit(s), segment ${l.segment}) is persisted but its ` +
        'segment lost the sale (a failover, or an AOF cut short): its units count as stock again' +
        (l.closed ? '; closed since, its return added nothing' : ''),
    );
  }
  return {
    productId,
    epoch: meta.epoch,
    total: meta.total + cut.added,
    seeded: meta.total,
    added: cut.putOn,
    taken: cut.takenOff,
    remaining: cut.remaining,
    pending: inCut.pending,
    persisted: inCut.persisted,
    persistedOrders: found.rows.length,
    returned: units.returned,
    held: units.held,
    distinctBuyers: inCut.buyers.size,
    openClaims: cut.claimed.size,
    live: found.live,
    afterCut: found.afterCut.size,
    lostWrites,
    problems: problems.list,
    ok: problems.list.length === 0,
  };
}
