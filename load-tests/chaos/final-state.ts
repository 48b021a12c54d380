/** Reads what the checker needs after the settle phase: reconcile per product, every order row. */
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.js';
import type { FinalState, HistoryEntry, OrderRow, ProductFinal } from './history.js';

export interface ReconcileAnswer {
  ok: boolean;
  total: number;
  remaining: number;
  pending: number;
  returned: number;
  held: {
    final: number;
    awaitingPayment: number;
    paid: number;
    returning: number;
    /** a paid order's life after: refunded after its sale's end, disputed, dispute lost */
    refunded?: number;
    disputed?: number;
    disputeLost?: number;
  };
  /** closed: cancelled or expired since, its return added nothing (lua/restock-3.lua) */
  lostWrites: Array<{ orderId: string; quantity: number; closed?: boolean }>;
  problems: string[];
}

/** reconcile's problem line for a lost write (src/orders/reconcile.ts), or its "more" line */
const isLostWriteProblem = (p: string) =>
  p.includes('is persisted but its segment lost the sale') || p.startsWith('... more problems');

export async function readFinalState(o: {
  durable: boolean;
  products: Array<{ id: string; limitPerUser: number }>;
  reconcile: (id: string) => Promise<ReconcileAnswer>;
  db: Kysely<Database>;
  history: HistoryEntry[];
  /** the run's start (epoch ms): a row's deducted_at in ms of the run */
  startMs: number;
}): Promise<{ final: FinalState; reports: Record<string, ReconcileAnswer> }> {
  const reports: Record<string, ReconcileAnswer> = {};
  const products: ProductFinal[] = [];
  for (const p of o.products) {
    const r = await o.reconcile(p.id);
    reports[p.id] = r;
    // `remaining` counts returned units again; conservation keeps them apart
    products.push({
      id: p.id,
      seeded: r.total,
      limitPerUser: p.limitPerUser,
      remaining: r.remaining - r.returned,
      sold:
        r.held.final +
        r.held.paid +
        (r.held.refunded ?? 0) +
        (r.held.disputed ?? 0) +
        (r.held.disputeLost ?? 0),
      held: r.pending + r.held.awaitingPayment + r.held.returning,
      restocked: r.returned,
      // a lost sale still open counts twice (sold, and back in stock); a closed one once
      lostUnits: r.lostWrites.reduce((n, l) => n + (l.closed ? 0 : l.quantity), 0),
    });
  }
  // the row's own key is derived from the order id; the client's Idempotency-Key comes from the history
  const keyOf = new Map<string, string>();
  for (const h of o.history)
    if (h.type === 'purchase' && h.orderId && h.outcome === 'ok') keyOf.set(h.orderId, h.key);
  for (const h of o.history)
    if (h.type === 'resolve' && h.orderId && !keyOf.has(h.orderId)) {
      const p = o.history.find((x) => x.type === 'purchase' && x.op === h.op);
      if (p?.type === 'purchase') keyOf.set(h.orderId, p.key);
    }
  const rows = await o.db
    .selectFrom('orders')
    .select([
      'id',
      'idempotency_key',
      'product_id',
      'user_id',
      'quantity',
      'status',
      'closed_at',
      'restocked_at',
      'version',
      'deducted_at',
    ])
    .where(
      'product_id',
      'in',
      o.products.map((p) => p.id),
    )
    .execute();
  const orders: OrderRow[] = rows.map((r) => ({
    id: r.id,
    idempotencyKey: keyOf.get(r.id) ?? r.idempotency_key,
    product: r.product_id,
    user: r.user_id,
    quantity: r.quantity,
    status: r.status,
    restocks: r.restocked_at ? 1 : 0,
    version: r.version,
    deductedMs: r.deducted_at.getTime() - o.startMs,
    ...(r.restocked_at &&
      r.closed_at && { returnDelayMs: r.restocked_at.getTime() - r.closed_at.getTime() }),
  }));
  const reconcileLost = Object.values(reports).flatMap((r) => r.lostWrites.map((l) => l.orderId));
  return {
    final: {
      durable: o.durable,
      products,
      orders,
      // each lost write is one of reconcile's problems, listed after any other (past 20, a count)
      reconcileOk: Object.values(reports).every((r) => r.problems.every(isLostWriteProblem)),
      reconcileLost,
    },
    reports,
  };
}
