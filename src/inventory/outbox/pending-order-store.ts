/**
 * Sold orders that so far live only in Redis (pending-orders.ts), behind one door: checkout
 * resolves a purchase that got no answer, the order lookup finds an order not yet persisted.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import {
  findInAllOutboxes,
  findInOutboxes,
  findPendingOrder,
  resolveOrderAtHome,
  type PendingOrderRef,
} from './pending-orders.js';
import type { OrderResolution } from './protocol.js';
import type { SoldOrder } from '../records/outbox-entry.js';

export class PendingOrderStore {
  private readonly deps: { redis: RedisClient; keys: Keys };

  constructor(redis: RedisClient, keys: Keys) {
    this.deps = { redis, keys };
  }

  /**
   * What became of `orderId` (no answer to its purchase), settled at the buyer's home segment: a
   * 'voided' order id stays refused for `voidTtlSeconds`. Null for a product that does not exist.
   */
  resolveAtHome(
    productId: string,
    userId: string,
    orderId: string,
    voidTtlSeconds: number,
  ): Promise<OrderResolution | null> {
    return resolveOrderAtHome(this.deps, productId, userId, orderId, voidTtlSeconds);
  }

  /** The product whose marker (or open claim) of `userId` lists `orderId`, if any. */
  findPending(userId: string, orderId: string): Promise<PendingOrderRef | undefined> {
    return findPendingOrder(this.deps, userId, orderId);
  }

  /** The outbox entry of `orderId` in any segment of `productId`. */
  inOutboxes(productId: string, orderId: string): Promise<SoldOrder | undefined> {
    return findInOutboxes(this.deps, productId, orderId);
  }

  /** The outbox entry of `orderId` in its product (an admin does not know the buyer). */
  inAllOutboxes(orderId: string): Promise<SoldOrder | undefined> {
    return findInAllOutboxes(this.deps, orderId);
  }
}
