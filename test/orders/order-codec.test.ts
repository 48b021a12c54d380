/**
 * The order's public shape has two writers: PostgreSQL's `order_event_data` (the order events'
 * `data`, rendered by a trigger in the change's own statement) and TypeScript's `rowView`
 * (GET /orders/:id, the admin listing, the export). Here they are held equal, field by field,
 * for an order in every state a row can be in, as test/inventory/lua-records.test.ts holds the
 * Lua records and their TypeScript codecs equal (a draw's entry and rank on one of them); and
 * every field of the documented order (OpenAPI's Order) is written by both.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderView } from '../../src/http/openapi/schemas.js';
import { insertOrders, type OrderRow } from '../../src/orders/index.js';
import { rowView } from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, paymentClient } from '../support/payments.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({}));
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, 'unused-secret-long-enough-0123456789', ns.adminToken);

type Rendered = OrderRow & { event_data: Record<string, unknown> };

/** The rows of `ids` with what order_event_data renders of each. */
const rendered = (ids: string[]) =>
  app.rt.db
    .selectFrom('orders')
    .selectAll()
    .select(sql<Record<string, unknown>>`order_event_data(orders)`.as('event_data'))
    .where('id', 'in', ids)
    .orderBy('id')
    .execute() as Promise<Rendered[]>;

/** The newest event of each order in `ids`. */
const newestEvents = (ids: string[]) =>
  app.rt.db
    .selectFrom('order_events')
    .select(['order_id', 'version', 'type', 'data'])
    .where('order_id', 'in', ids)
    .orderBy('order_id')
    .orderBy('version', 'desc')
    .distinctOn('order_id')
    .execute();

/** Orders of `productId` (epoch 1) in every state, written as the services write them. */
async function ordersInEveryState(productId: string): Promise<string[]> {
  const sold = (i: number, payWithinSeconds: number) => ({
    orderId: `0000${productId.slice(1, 5)}-0000-4000-8000-${String(i).padStart(12, '0')}`,
    productId,
    epoch: 1,
    userId: `u${i}`,
    quantity: 1 + (i % 3),
    segment: i % 2,
    homeSegment: 0,
    outboxId: `${i}-0`,
    deductedAt: Date.now() - 1_000 + i,
    payWithinSeconds,
  });
  const orders = [sold(0, 0), ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => sold(i, 600))];
  // u2 holds an entry of the epoch's draw at rank 7: its order carries them, the others none
  await sql`insert into draw_entries (product_id, epoch, position, entry_id, user_id)
    values (${productId}, 1, 0, ${`entry-of-u2-${productId}`}, 'u2')`.execute(app.rt.db);
  await sql`insert into draw_ranks (product_id, epoch, rank, position)
    values (${productId}, 1, 7, 0)`.execute(app.rt.db);
  expect(await insertOrders(app.rt.db, orders)).toBe(10);
  const [, awaiting, paid, cancelled, expired, returning, refunded, disputed, won, lost] =
    orders.map((o) => o.orderId);
  const change = (id: string, set: string) =>
    sql`update orders set ${sql.raw(set)} where id = ${id}`.execute(app.rt.db);
  await change(paid!, `status = 'paid', payment_id = 'pi_3Codec${productId}', closed_at = now()`);
  await change(cancelled!, `status = 'cancelled', closed_at = now()`);
  await change(cancelled!, `restocked_at = now()`);
  await change(expired!, `status = 'expired', closed_at = now()`);
  await change(expired!, `restocked_at = now()`);
  await change(returning!, `status = 'cancelled', closed_at = now()`);
  for (const [i, id] of [refunded, disputed, won, lost].entries()) {
    await change(
      id!,
      `status = 'paid', payment_id = 'pi_3Codec${i}${productId}', closed_at = now()`,
    );
  }
  await change(refunded!, `status = 'refunded', refunded_at = now()`);
  await change(refunded!, `restocked_at = now()`);
  await change(disputed!, `status = 'disputed', dispute_id = 'dp_1', disputed_at = now()`);
  await change(won!, `status = 'disputed', dispute_id = 'dp_2', disputed_at = now()`);
  await change(won!, `status = 'paid', dispute_closed_at = now()`);
  await change(
    lost!,
    `status = 'dispute_lost', dispute_id = 'dp_3', disputed_at = now(),
    dispute_closed_at = now()`,
  );
  expect(awaiting).toBeDefined();
  return orders.map((o) => o.orderId);
}

describe("the order's one shape", () => {
  it.each([
    ['a priced sale', { amount: 1_999, currency: 'EUR' }],
    ['an unpriced sale', undefined],
  ])('order_event_data and rowView agree field by field, in every state (%s)', async (_, price) => {
    const p = newProduct();
    await client.seed(p, { total: 50, payWithinSeconds: 600, ...(price && { price }) });
    const ids = await ordersInEveryState(p);
    const rows = await rendered(ids);
    expect(rows.map((r) => r.status)).toEqual([
      'final',
      'awaiting_payment',
      'paid',
      'cancelled',
      'expired',
      'cancelled',
      'refunded',
      'disputed',
      'paid',
      'dispute_lost',
    ]);
    expect(rows.map((r) => [r.draw_entry_id, r.draw_rank])).toEqual(
      rows.map((r) => (r.user_id === 'u2' ? [`entry-of-u2-${p}`, 7] : [null, null])),
    );
    for (const row of rows) {
      const fromSql = row.event_data;
      const fromTs = rowView(row) as unknown as Record<string, unknown>;
      const where = `${row.status} order ${row.id}`;
      expect(Object.keys(fromSql).sort(), `${where}: the fields`).toEqual(
        Object.keys(fromTs).sort(),
      );
      for (const field of Object.keys(fromTs)) {
        expect(fromSql[field], `${where}: ${field}`).toEqual(fromTs[field]);
      }
    }
  });

  it("writes every field of the documented order, and each event's data is the row at its version", async () => {
    const p = newProduct();
    await client.seed(p, {
      total: 50,
      payWithinSeconds: 600,
      price: { amount: 500, currency: 'JPY' },
    });
    const ids = await ordersInEveryState(p);
    const rows = await rendered(ids);
    const written = new Set(rows.flatMap((r) => Object.keys(rowView(r))));
    // `pending` orders come from Redis, never from a row or an event: every other field is both's
    expect([...written].sort()).toEqual(Object.keys(orderView.shape).sort());
    const events = await newestEvents(ids);
    expect(events.map((e) => e.type)).toEqual([
      'order.created',
      'order.created',
      'order.paid',
      'order.returned',
      'order.returned',
      'order.cancelled',
      'order.returned',
      'order.disputed',
      'order.dispute_won',
      'order.dispute_lost',
    ]);
    for (const [i, row] of rows.entries()) {
      expect(events[i]!.version).toBe(row.version);
      expect(events[i]!.data, `the newest event of ${row.id}`).toEqual(rowView(row));
    }
  });
});
