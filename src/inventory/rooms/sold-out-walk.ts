/**
 * "Sold out while you waited": once a room's product is sold out for good (no unit can come
 * back, no admission still out), every shopper still waiting is told once, through the holder's
 * `tell` (the room's events: services/room/room-events.ts). The holder walks the line from the
 * served counter in batches (lua/roomSoldOut-2.lua: one script call a batch), and names each
 * batch written at its next call: a holder killed midway leaves at most one batch to be told
 * again by the next holder, whose events carry the same ids (written once).
 */
import type { ProductView } from '../catalogue/catalogue.js';
import type { RoomPlan } from './room-plan.js';
import type { AdmitTick, RoomStore } from './store.js';

/** Shoppers a batch names: one script call and one INSERT of this many events. */
export const SOLD_OUT_BATCH = 500;

/**
 * After a sale with a payment window sold out, its last unpaid orders expire within the window
 * and their units come back; past the window and this margin (the expiry job, or the sweep) no
 * unit can come back.
 */
export const RETURNS_MARGIN_MS = 60_000;

/** A waiting shopper of a room sold out for good: their ticket, and their place at the end. */
export interface SoldOutShopper {
  userId: string;
  ticket: number;
  /** places from admission when the product sold out (1: next in line) */
  position: number;
}

/** Sold out (found, or marked), whether or not a unit may come back. */
export const isSoldOut = (view: ProductView) => view.soldOut || view.soldOutMarked;

/** Units may still come back: a payment window, and its last unpaid orders maybe still open. */
export const mayComeBack = (view: ProductView, now: number) =>
  view.payWithinSeconds > 0 &&
  (view.soldOutAt === 0 ||
    now < view.soldOutAt + view.payWithinSeconds * 1_000 + RETURNS_MARGIN_MS);

export interface SoldOutWalkDeps {
  store: Pick<RoomStore, 'soldOutBatch'>;
  /** writes a batch's events; the walk goes on once it resolves (unset: nobody is told) */
  onSoldOut?: ((view: ProductView, shoppers: SoldOutShopper[]) => Promise<void>) | undefined;
  /** shoppers a batch names (default SOLD_OUT_BATCH; tests: small, to kill a walk midway) */
  soldOutBatch?: number | undefined;
  /** the admitter stops: the walk stops after the batch it told (the next holder resumes) */
  stopped(): boolean;
}

/**
 * Tells the waiting shoppers of `view`'s room, batch after batch, while `lease` holds. Returns the
 * ticket the walk reached (`done`: every shopper up to it told), or why it stopped short.
 */
export async function walkSoldOut(
  deps: SoldOutWalkDeps,
  view: ProductView,
  lease: { fence: number; signal: AbortSignal },
): Promise<{ code: 'done'; to: number } | { code: 'unready' | 'fenced' | 'stopped' }> {
  const tell = deps.onSoldOut;
  if (!tell) return { code: 'stopped' };
  const size = Math.max(1, Math.min(1_000, deps.soldOutBatch ?? SOLD_OUT_BATCH));
  let writtenTo = 0;
  for (;;) {
    const r = await deps.store.soldOutBatch(view.id, view.epoch, {
      fence: lease.fence,
      writtenTo,
      size,
    });
    if (r.code !== 'batch') return { code: r.code };
    if (r.users.length === 0) return { code: 'done', to: r.from };
    const shoppers: SoldOutShopper[] = [];
    r.users.forEach((userId, i) => {
      const ticket = r.from + i + 1;
      if (userId) shoppers.push({ userId, ticket, position: ticket - r.served });
    });
    if (shoppers.length > 0) await tell(view, shoppers);
    writtenTo = r.from + r.users.length;
    if (lease.signal.aborted || deps.stopped()) return { code: 'stopped' };
  }
}

/**
 * After a holder's tick: sold out for good (no unit can come back) and no admission still out,
 * whoever still waits is told, once (the walk's end is kept: a join behind it is told at a later
 * tick).
 */
export async function tellSoldOut(
  deps: SoldOutWalkDeps,
  plan: RoomPlan,
  view: ProductView,
  tick: AdmitTick & { code: 'ticked' },
  lease: { fence: number; signal: AbortSignal },
): Promise<void> {
  if (!deps.onSoldOut || tick.active > 0 || tick.shuffleLeft > 0) return;
  if (tick.next <= plan.soldOutTo) return;
  if (!isSoldOut(view) || mayComeBack(view, Date.now())) return;
  const walk = await walkSoldOut(deps, view, lease);
  if (walk.code === 'done') plan.soldOutTo = walk.to;
}
