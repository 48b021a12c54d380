import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * The payment's life after `paid` (docs/payments.md#after-paid-refunds-and-disputes):
 *
 * - `refunded`: the provider refunded the whole payment (`refunded_at`). While the sale runs its
 *   units go back on sale (`restocked_at`, as a cancel's); after the sale's end they stay sold
 *   (`units_kept_at`).
 * - `disputed`: the buyer's bank opened a dispute (`dispute_id`, `disputed_at`). Won: the order is
 *   `paid` again; lost: `dispute_lost` (the money went back to the buyer; the units stay sold).
 *   Either way `dispute_closed_at` says when.
 *
 * The events: `order.refunded`, `order.disputed`, `order.dispute_won` (disputed -> paid),
 * `order.dispute_lost`, and `order.returned` when a refund's units are back. A refusal of any
 * provider's notice is kept in payment_refusals with who sent it (`provider`, `notice_id`) and why
 * in words (`detail`).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table orders drop constraint if exists orders_status_check`.execute(db);
  // checked without holding the table: NOT VALID, then VALIDATE (a lighter lock)
  await sql`alter table orders add constraint orders_status_known check (status in
    ('final', 'awaiting_payment', 'paid', 'cancelled', 'expired', 'refunded', 'disputed',
     'dispute_lost')) not valid`.execute(db);
  await sql`alter table orders validate constraint orders_status_known`.execute(db);
  await db.schema
    .alterTable('orders')
    .addColumn('refunded_at', 'timestamptz')
    // a refund after the sale's end: when its units were kept sold rather than returned
    .addColumn('units_kept_at', 'timestamptz')
    // the provider's id of the dispute (Stripe's dp_...), when one was opened
    .addColumn('dispute_id', 'text')
    .addColumn('disputed_at', 'timestamptz')
    .addColumn('dispute_closed_at', 'timestamptz')
    .execute();
  // refunds whose units are still to return (a crash between the refund and its return)
  await sql`create index orders_refund_returning on orders (refunded_at)
    where status = 'refunded' and restocked_at is null and units_kept_at is null`.execute(db);

  await db.schema
    .alterTable('payment_refusals')
    .addColumn('provider', 'text')
    .addColumn('notice_id', 'text')
    .addColumn('detail', 'text')
    .execute();

  await sql`
    create or replace function order_events_changed() returns trigger language plpgsql as $$
    begin
      insert into order_events (id, order_id, version, type, data)
      values ('evt_' || new.id || '_' || new.version, new.id, new.version,
              case when new.status is not distinct from old.status then 'order.returned'
                   when old.status = 'disputed' and new.status = 'paid' then 'order.dispute_won'
                   else 'order.' || new.status end,
              order_event_data(new));
      return null;
    end $$`.execute(db);

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
        'refundedAt', to_char(o.refunded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'disputedAt', to_char(o.disputed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'disputeClosedAt',
          to_char(o.dispute_closed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'price', case when o.unit_amount is not null then
          jsonb_build_object('amount', o.unit_amount, 'currency', o.currency) end,
        'total', case when o.total_amount is not null then
          jsonb_build_object('amount', o.total_amount, 'currency', o.currency) end))
    $$`.execute(db);
}

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
  await sql`
    create or replace function order_events_changed() returns trigger language plpgsql as $$
    begin
      insert into order_events (id, order_id, version, type, data)
      values ('evt_' || new.id || '_' || new.version, new.id, new.version,
              case when new.status is distinct from old.status then 'order.' || new.status
                   else 'order.returned' end,
              order_event_data(new));
      return null;
    end $$`.execute(db);
  await db.schema
    .alterTable('payment_refusals')
    .dropColumn('provider')
    .dropColumn('notice_id')
    .dropColumn('detail')
    .execute();
  await sql`drop index if exists orders_refund_returning`.execute(db);
  await db.schema
    .alterTable('orders')
    .dropColumn('refunded_at')
    .dropColumn('units_kept_at')
    .dropColumn('dispute_id')
    .dropColumn('disputed_at')
    .dropColumn('dispute_closed_at')
    .execute();
  await sql`alter table orders drop constraint if exists orders_status_known`.execute(db);
  await sql`alter table orders add constraint orders_status_check check (status in
    ('final', 'awaiting_payment', 'paid', 'cancelled', 'expired'))`.execute(db);
}
