/**
 * Order rows in PostgreSQL: plain functions taking `db` first, and the same as a repository
 * object (OrdersRepository) for the modules that take a port instead of a connection.
 */
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { OrderRow, OrderRowStatus } from '../db/schema.js';
import type { Price, SoldOrder } from '../inventory/index.js';

export type { OrderRow, OrderRowStatus, PaymentIntentRow } from '../db/schema.js';

/** Which orders a listing wants (each filter optional). */
export interface OrderFilter {
  productId?: string | undefined;
  status?: OrderRowStatus | undefined;
  /** changed state at or after this */
  updatedSince?: Date | undefined;
}

/** The row's unique `idempotency_key`, `<product>:<epoch>:<orderId>`: the same deduct always yields the same key (not the client's Idempotency-Key). */
export const orderRowKey = (order: SoldOrder) =>
  `${order.productId}:${order.epoch}:${order.orderId}`;

/**
 * Inserts orders in one statement; an order already there (a redelivery) is skipped. The rows
 * travel as twelve arrays (`unnest`), not twelve parameters per row: a batch of 500 is one
 * statement with 12 parameters for the driver to serialise and PostgreSQL to bind, instead of
 * 6 000. Each row copies its sale epoch's price (sale_prices, written before the epoch's stock)
 * and, bought in a draw, its shopper's entry and rank (one per shopper, ranked before any right
 * was given): a lookup in the same statement by the entries' (product, epoch, user) index, found
 * empty at once for a plain sale, so no round trip is added to persisting an order.
 * @returns how many rows were new.
 */
export async function insertOrders(db: Db, orders: readonly SoldOrder[]): Promise<number> {
  if (orders.length === 0) return 0;
  const column = <T>(valueOf: (o: SoldOrder) => T) => orders.map(valueOf);
  const r = await sql`
    insert into orders (id, idempotency_key, product_id, epoch, user_id, quantity, segment,
                        home_segment, outbox_id, deducted_at, status, pay_by,
                        unit_amount, currency, total_amount, draw_entry_id, draw_rank)
    select u.*, p.unit_amount, p.currency, p.unit_amount * u.quantity, d.entry_id, d.rank
    from unnest(
      ${column((o) => o.orderId)}::uuid[], ${column(orderRowKey)}::text[],
      ${column((o) => o.productId)}::text[], ${column((o) => o.epoch)}::int[],
      ${column((o) => o.userId)}::text[], ${column((o) => o.quantity)}::int[],
      ${column((o) => o.segment)}::int[], ${column((o) => o.homeSegment)}::int[],
      ${column((o) => o.outboxId)}::text[],
      ${column((o) => new Date(o.deductedAt).toISOString())}::timestamptz[],
      ${column((o) => (o.payWithinSeconds > 0 ? 'awaiting_payment' : 'final'))}::text[],
      ${column((o) => payBy(o)?.toISOString() ?? null)}::timestamptz[])
      as u(id, idempotency_key, product_id, epoch, user_id, quantity, segment, home_segment,
           outbox_id, deducted_at, status, pay_by)
    left join sale_prices p on p.product_id = u.product_id and p.epoch = u.epoch
    left join lateral (
      select e.entry_id, r.rank from draw_entries e
      join draw_ranks r on r.product_id = e.product_id and r.epoch = e.epoch
        and r.position = e.position
      where e.product_id = u.product_id and e.epoch = u.epoch and e.user_id = u.user_id
      limit 1) d on true
    on conflict do nothing`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** When a sold order must be paid by: the deduct's server time plus the window; none if final. */
export function payBy(order: Pick<SoldOrder, 'deductedAt' | 'payWithinSeconds'>): Date | null {
  return order.payWithinSeconds > 0
    ? new Date(order.deductedAt + order.payWithinSeconds * 1_000)
    : null;
}

export async function findOrder(db: Db, id: string): Promise<OrderRow | undefined> {
  return db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function ordersOf(db: Db, productId: string, epoch: number) {
  return db
    .selectFrom('orders')
    .select([
      'id',
      'user_id',
      'quantity',
      'segment',
      'home_segment',
      'outbox_id',
      'status',
      'restocked_at',
      'units_kept_at',
    ])
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .execute();
}

/**
 * Up to `limit` orders matching `filter` with ids after `after`, by id: a keyset page. A row
 * keeps its id, so paging on it neither repeats nor skips a row that exists throughout.
 */
export async function listOrders(
  db: Db,
  filter: OrderFilter,
  after: string | undefined,
  limit: number,
): Promise<OrderRow[]> {
  return db
    .selectFrom('orders')
    .selectAll()
    .$if(filter.productId !== undefined, (q) => q.where('product_id', '=', filter.productId!))
    .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status!))
    .$if(filter.updatedSince !== undefined, (q) =>
      q.where('updated_at', '>=', filter.updatedSince!),
    )
    .$if(after !== undefined, (q) => q.where('id', '>', after!))
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** A sale epoch's price; undefined when it was unpriced. */
export async function salePrice(
  db: Db,
  productId: string,
  epoch: number,
): Promise<Price | undefined> {
  const row = await db
    .selectFrom('sale_prices')
    .select(['unit_amount', 'currency'])
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .executeTakeFirst();
  return row && { amount: Number(row.unit_amount), currency: row.currency };
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

/**
 * Units per buyer of one sale epoch: the orders that hold their units (an order cancelled or
 * expired gave them back to the sale).
 */
export async function unitsByBuyer(
  db: Db,
  productId: string,
  epoch: number,
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('orders')
    .select(['user_id', sql<string>`sum(quantity)`.as('units')])
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .where('status', 'not in', ['cancelled', 'expired'])
    .groupBy('user_id')
    .execute();
  return new Map(rows.map((r) => [r.user_id, Number(r.units)]));
}

/** The order rows of one database (or one transaction). */
export class OrdersRepository {
  constructor(protected readonly db: Db) {}

  /** @returns how many rows were new */
  insertOrders(orders: readonly SoldOrder[]): Promise<number> {
    return insertOrders(this.db, orders);
  }

  findOrder(id: string): Promise<OrderRow | undefined> {
    return findOrder(this.db, id);
  }

  ordersOf(productId: string, epoch: number) {
    return ordersOf(this.db, productId, epoch);
  }

  persistedBySegment(productId: string, epoch: number): Promise<Map<number, number>> {
    return persistedBySegment(this.db, productId, epoch);
  }

  unitsByBuyer(productId: string, epoch: number): Promise<Map<string, number>> {
    return unitsByBuyer(this.db, productId, epoch);
  }

  salePrice(productId: string, epoch: number): Promise<Price | undefined> {
    return salePrice(this.db, productId, epoch);
  }

  listOrders(filter: OrderFilter, after: string | undefined, limit: number) {
    return listOrders(this.db, filter, after, limit);
  }
}
