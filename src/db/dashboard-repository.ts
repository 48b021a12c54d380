/** The dashboard's read of the order rows: units per product, sale (epoch) and status. */
import { sql } from 'kysely';
import type { Db } from './index.js';

export class DashboardRepository {
  constructor(private readonly db: Db) {}

  /** The orders of each product summed per sale and status, with their first and last deduct (ms). */
  async orderGroups(productIds: readonly string[]) {
    if (productIds.length === 0) return [];
    const { rows } = await sql<{
      product_id: string;
      epoch: number;
      status: string;
      units: string;
      first_at: Date;
      last_at: Date;
    }>`
      select product_id, epoch, status, sum(quantity) as units,
             min(deducted_at) as first_at, max(deducted_at) as last_at
      from orders where product_id in (${sql.join(productIds)})
      group by product_id, epoch, status`.execute(this.db);
    return rows.map((r) => ({
      productId: r.product_id,
      epoch: r.epoch,
      status: r.status,
      units: Number(r.units),
      firstAt: r.first_at.getTime(),
      lastAt: r.last_at.getTime(),
    }));
  }
}
