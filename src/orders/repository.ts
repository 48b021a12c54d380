/** Order rows in PostgreSQL: plain functions taking `db` first. */
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { NewOrderRow, OrderRow } from '../db/schema.js';
import type { OutboxOrder } from './outbox.js';

/** `<product>:<epoch>:<orderId>`: the same deduct always yields the same key. */
export const idempotencyKey = (o: OutboxOrder) => `${o.productId}:${o.epoch}:${o.orderId}`;

const toRow = (o: OutboxOrder): NewOrderRow => ({
  id: o.orderId,
  idempotency_key: idempotencyKey(o),
  product_id: o.productId,
  epoch: o.epoch,
  user_id: o.userId,
  quantity: o.quantity,
  segment: o.segment,
  home_segment: o.homeSegment,
  outbox_id: o.outboxId,
  deducted_at: new Date(o.deductedAt),
});

/**
 * Inserts orders in one statement; an order already there (a redelivery) is skipped.
 * @returns how many rows were new.
 */
export async function insertOrders(db: Db, orders: readonly OutboxOrder[]): Promise<number> {
  if (orders.length === 0) return 0;
  const r = await db
    .insertInto('orders')
    .values(orders.map(toRow))
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0);
}

export async function findOrder(db: Db, id: string): Promise<OrderRow | undefined> {
  return db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function ordersOf(db: Db, productId: string, epoch: number) {
  return db
    .selectFrom('orders')
    .select(['id', 'user_id', 'quantity', 'segment', 'outbox_id'])
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .execute();
}

/** Units persisted per segment for one sale epoch. */
export async function persistedBySegment(
  db: Db,
  productId: string,
  epoch: number,
): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('orders')
    .select(['segment', sql<string>`sum(quantity)`.as('units')])
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .groupBy('segment')
    .execute();
  return new Map(rows.map((r) => [r.segment, Number(r.units)]));
}
