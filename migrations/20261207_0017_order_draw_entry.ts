import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * An order bought with a draw's purchase right names its entry (docs/draw.md#orders-of-a-draw):
 * `draw_entry_id` (the frozen list's entry id) and `draw_rank` (its rank: 1 the first drawn, as
 * the transcript's `winners` then `waitlist` list them). Both null for an order of a plain sale;
 * written once, at the insert (the order worker finds the entry by product, epoch and shopper).
 *
 * `order_event_data` renders them as `entryId` and `rank`, after the fields it had (absent when
 * null, as every optional field): a reader of the old shape reads the new one unchanged.
 */
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

const eventData = (withDraw: boolean) => sql`
  create or replace function order_event_data(o orders) returns jsonb language sql stable as $$
    select jsonb_strip_nulls(jsonb_build_object(
      'orderId', o.id,
      'productId', o.product_id,
      'epoch', o.epoch,
      'userId', o.user_id,
      'quantity', o.quantity,
      'status', case o.status when 'final' then 'persisted' else o.status end,
      'version', o.version,
      'deductedAt', to_char(o.deducted_at at time zone 'UTC', ${sql.raw(ISO)}),
      'persistedAt', to_char(o.persisted_at at time zone 'UTC', ${sql.raw(ISO)}),
      'updatedAt', to_char(o.updated_at at time zone 'UTC', ${sql.raw(ISO)}),
      'payBy', to_char(o.pay_by at time zone 'UTC', ${sql.raw(ISO)}),
      'paymentId', o.payment_id,
      'closedAt', to_char(o.closed_at at time zone 'UTC', ${sql.raw(ISO)}),
      'restockedAt', to_char(o.restocked_at at time zone 'UTC', ${sql.raw(ISO)}),
      'refundedAt', to_char(o.refunded_at at time zone 'UTC', ${sql.raw(ISO)}),
      'disputedAt', to_char(o.disputed_at at time zone 'UTC', ${sql.raw(ISO)}),
      'disputeClosedAt', to_char(o.dispute_closed_at at time zone 'UTC', ${sql.raw(ISO)}),
      'price', case when o.unit_amount is not null then
        jsonb_build_object('amount', o.unit_amount, 'currency', o.currency) end,
      'total', case when o.total_amount is not null then
        jsonb_build_object('amount', o.total_amount, 'currency', o.currency) end
      ${withDraw ? sql.raw(`, 'entryId', o.draw_entry_id, 'rank', o.draw_rank`) : sql.raw('')}))
  $$`;

export async function up(db: Kysely<any>): Promise<void> {
  // nullable, no default: adding them rewrites no row and holds the table a moment only
  await db.schema
    .alterTable('orders')
    .addColumn('draw_entry_id', 'text')
    .addColumn('draw_rank', 'integer')
    .execute();
  await eventData(true).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await eventData(false).execute(db);
  await db.schema
    .alterTable('orders')
    .dropColumn('draw_entry_id')
    .dropColumn('draw_rank')
    .execute();
}
