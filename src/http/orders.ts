/**
 * `GET /orders/:id`: persisted (a row) or pending (sold, still in an outbox). Only the buyer or
 * an admin may read an order; to anyone else it does not exist (404).
 */
import type { IRouter } from 'express';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import type { OrderLookup } from '../services/index.js';
import { isAdmin, shopperId } from './auth.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const notFound = (id: string) =>
  new ProblemError({
    status: 404,
    code: 'unknown-order',
    title: 'Unknown order',
    detail: `no order ${id}`,
  });

export interface OrderRoutes {
  auth: Config['auth'];
  orders: OrderLookup;
}

export function mountOrders(router: IRouter, deps: OrderRoutes): void {
  router.get('/orders/:id', async (req, res) => {
    const id = String(req.params.id);
    const admin = isAdmin(req, deps.auth.adminToken);
    const reader = admin ? { admin: true as const } : { userId: await shopperId(req, deps.auth) };
    if (!UUID.test(id)) throw notFound(id);
    const order = await deps.orders.find(id, reader);
    if (!order) throw notFound(id);
    res.json(order);
  });
}
