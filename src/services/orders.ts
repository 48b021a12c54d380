/**
 * Reading one order: pending (sold, still in an outbox, so only in Redis) or persisted (a row in
 * PostgreSQL). Redis is asked first, so a buyer (or an admin) learns of a pending order even
 * while PostgreSQL is away. Only the buyer or an admin may read an order; to anyone else it does
 * not exist.
 */
import type { RedisClient } from '../redis/connection.js';
import type { Db } from '../db/index.js';
import {
  findInAllOutboxes,
  findInOutboxes,
  findPendingOrder,
  type SoldOrder,
} from '../inventory/index.js';
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
  | {
      orderId: string;
      status: 'pending';
      productId: string;
      userId: string;
      quantity?: number;
      deductedAt?: string;
    };

/** Who asks: a shopper (by id) or an admin. */
export type OrderReader = { userId: string } | { admin: true };

const pendingView = (o: SoldOrder): OrderView => ({
  orderId: o.orderId,
  status: 'pending',
  productId: o.productId,
  userId: o.userId,
  quantity: o.quantity,
  deductedAt: new Date(o.deductedAt).toISOString(),
});

export class OrderLookup {
  constructor(private readonly deps: { redis: RedisClient; keys: Keys; db: Db }) {}

  /** The order as `reader` may see it; null when it does not exist or is not theirs. */
  async find(orderId: string, reader: OrderReader): Promise<OrderView | null> {
    const userId = 'userId' in reader ? reader.userId : undefined;
    const pending = await this.pending(orderId, userId);
    if (pending) return pending;
    const row = await findOrder(this.deps.db, orderId);
    if (!row || (userId !== undefined && row.user_id !== userId)) return null;
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

  /** The order while it is only in Redis (an outbox entry, or a spill claim still settling). */
  private async pending(orderId: string, userId: string | undefined): Promise<OrderView | null> {
    if (userId === undefined) {
      const order = await findInAllOutboxes(this.deps, orderId);
      return order ? pendingView(order) : null;
    }
    const ref = await findPendingOrder(this.deps, userId, orderId);
    if (!ref) return null;
    const order = await findInOutboxes(this.deps, ref.productId, orderId);
    if (order) return pendingView(order);
    // a claim with no sale yet: its units are still being taken from another segment
    return ref.claimOnly ? { orderId, status: 'pending', productId: ref.productId, userId } : null;
  }
}
