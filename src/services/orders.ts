/**
 * Reading one order: persisted (a row in PostgreSQL) or pending (sold, still only in Redis). Only
 * the buyer or an admin may read an order; to anyone else it does not exist.
 */
import type { Redis } from 'ioredis';
import type { Db } from '../db/index.js';
import { findPendingOrder } from '../inventory/index.js';
import { findOrder } from '../orders/index.js';
import type { Keys } from '../redis/keys.js';

export type OrderView =
  | {
      orderId: string;
      status: 'persisted';
      productId: string;
      userId: string;
      quantity: number;
      deductedAt: string;
      persistedAt: string;
    }
  | { orderId: string; status: 'pending'; productId: string; userId: string };

/** Who asks: a shopper (by id) or an admin. */
export type OrderReader = { userId: string } | { admin: true };

export class OrderLookup {
  constructor(private readonly deps: { redis: Redis; keys: Keys; db: Db }) {}

  /** The order as `reader` may see it; null when it does not exist or is not theirs. */
  async find(orderId: string, reader: OrderReader): Promise<OrderView | null> {
    const userId = 'userId' in reader ? reader.userId : undefined;
    const row = await findOrder(this.deps.db, orderId);
    if (row) {
      if (userId !== undefined && row.user_id !== userId) return null;
      return {
        orderId: row.id,
        status: 'persisted',
        productId: row.product_id,
        userId: row.user_id,
        quantity: row.quantity,
        deductedAt: row.deducted_at.toISOString(),
        persistedAt: row.persisted_at.toISOString(),
      };
    }
    if (userId === undefined) return null;
    const pending = await findPendingOrder(this.deps, userId, orderId);
    return pending ? { orderId, status: 'pending', productId: pending.productId, userId } : null;
  }
}
