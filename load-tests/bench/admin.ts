/** The admin API as the benchmarks use it: seeding, and waiting until a sale is persisted. */
import { until } from './processes.js';

export const ADMIN_TOKEN = 'bench-admin-token-0123456789';

export const admin = (base: string, method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

export interface Reconcile {
  ok: boolean;
  total: number;
  remaining: number;
  pending: number;
  persisted: number;
  persistedOrders: number;
  problems: string[];
}

/** The reconciliation report once nothing of the sale is pending in an outbox. */
export async function persistedAndReconciled(base: string, productId: string): Promise<Reconcile> {
  let report: Reconcile | undefined;
  await until(
    `persistence of ${productId}`,
    async () => {
      const res = await admin(base, 'POST', `/admin/products/${productId}/reconcile`);
      report = (await res.json()) as Reconcile;
      return report.pending === 0;
    },
    300_000,
  );
  return report!;
}
