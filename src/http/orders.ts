/**
 * `GET /orders/:id`: persisted (a row) or pending (sold, still in an outbox). Only the buyer or
 * an admin may read an order; to anyone else it does not exist (404).
 */
import { Router } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import { ProblemError } from '../errors.js';
import { homeSegment } from '../inventory/layout.js';
import { findOrder } from '../orders/index.js';
import type { Keys } from '../redis/keys.js';
import { isAdmin, shopperId } from './auth.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const notFound = (id: string) =>
  new ProblemError({
    status: 404,
    code: 'unknown-order',
    title: 'Unknown order',
    detail: `no order ${id}`,
  });

export interface OrdersDeps {
  config: Config;
  redis: Redis;
  keys: Keys;
  db: Db;
}

export function ordersRouter(d: OrdersDeps): Router {
  const router = Router();

  /** The product whose marker (or open claim) of `userId` lists `orderId`, if any. */
  async function pendingProductOf(userId: string, orderId: string): Promise<string | undefined> {
    for (const productId of await d.redis.smembers(d.keys.products())) {
      const segments = Number(await d.redis.hget(d.keys.product(productId).meta, 'segments'));
      if (!segments) continue;
      const k = d.keys.segment(productId, homeSegment(userId, segments));
      const [marker, claim] = await Promise.all([
        d.redis.hget(k.buyers, userId),
        d.redis.hget(k.claims, userId),
      ]);
      const ids = (marker?.split(':')[1] ?? '').split(',');
      if (ids.includes(orderId) || claim?.startsWith(`${orderId}|`)) return productId;
    }
    return undefined;
  }

  router.get('/orders/:id', async (req, res) => {
    const id = String(req.params.id);
    const admin = isAdmin(req, d.config.auth.adminToken);
    const userId = admin ? undefined : shopperId(req, d.config.auth);
    if (!UUID.test(id)) throw notFound(id);
    const row = await findOrder(d.db, id);
    if (row) {
      if (!admin && row.user_id !== userId) throw notFound(id);
      res.json({
        orderId: row.id,
        status: 'persisted',
        productId: row.product_id,
        userId: row.user_id,
        quantity: row.quantity,
        deductedAt: row.deducted_at.toISOString(),
        persistedAt: row.persisted_at.toISOString(),
      });
      return;
    }
    const productId = userId ? await pendingProductOf(userId, id) : undefined;
    if (!productId) throw notFound(id);
    res.json({ orderId: id, status: 'pending', productId, userId });
  });

  return router;
}
