import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * One shape for the order: an event's `data` is the order as GET /orders/:id shows it at that
 * version, field for field. The view had `updatedAt` (its last change of state) and the event
 * not; the event now has it too (the view gained `epoch` and `paymentId`, which the event had).
 * test/orders/order-codec.test.ts holds this function and the TypeScript view (rowView) equal.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function order_event_data(o orders) returns jsonb language sql stable as $$
      select jsonb_strip_nulls(jsonb_build_object(
        'orderId', o.id,
        'productId', o.product_id,
        'epoch', o.epoch,
        'userId', o.user_id,
        'quantity', o.quantity,
        'status', case o.status when 'final' then 'persisted' else o.status end,
        'version', o.version,
        'deductedAt', to_char(o.deducted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'persistedAt', to_char(o.persisted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'updatedAt', to_char(o.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'payBy', to_char(o.pay_by at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'paymentId', o.payment_id,
        'closedAt', to_char(o.closed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'restockedAt', to_char(o.restocked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'price', case when o.unit_amount is not null then
          jsonb_build_object('amount', o.unit_amount, 'currency', o.currency) end,
        'total', case when o.total_amount is not null then
          jsonb_build_object('amount', o.total_amount, 'currency', o.currency) end))
    $$`.execute(db);
}

/** The function as migration 0005 made it. */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function order_event_data(o orders) returns jsonb language sql stable as $$
      select jsonb_strip_nulls(jsonb_build_object(
        'orderId', o.id,
        'productId', o.product_id,
        'epoch', o.epoch,
        'userId', o.user_id,
        'quantity', o.quantity,
        'status', case o.status when 'final' then 'persisted' else o.status end,
        'version', o.version,
        'deductedAt', to_char(o.deducted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'persistedAt', to_char(o.persisted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'payBy', to_char(o.pay_by at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'paymentId', o.payment_id,
        'closedAt', to_char(o.closed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'restockedAt', to_char(o.restocked_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'price', case when o.unit_amount is not null then
          jsonb_build_object('amount', o.unit_amount, 'currency', o.currency) end,
        'total', case when o.total_amount is not null then
          jsonb_build_object('amount', o.total_amount, 'currency', o.currency) end))
    $$`.execute(db);
}
