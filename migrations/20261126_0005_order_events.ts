import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Order events: every change of an order's state writes an event in the statement that makes
 * it, so in its transaction (none before the commit, none lost after it), whichever code (or
 * person) writes the row. Triggers on `orders` do it:
 *
 * - a row inserted: `order.created` (version 1);
 * - its status changed: `order.paid`, `order.cancelled`, `order.expired`; its restocked_at set:
 *   `order.returned`. Each bumps the row's `version` (before the row is written) and records the
 *   event at that version.
 *
 * An event keeps the order as it was at its version (`data`, the shape of GET /orders/:id) and
 * the id of the transaction that wrote it (`txid`): the feed is read in (txid, position) order
 * and only below the oldest transaction still running, so an event never appears behind a
 * cursor a reader already passed (docs/events.md#the-feed).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index orders_updated_at on orders (updated_at)`.execute(db);
  await sql`create index orders_product_id on orders (product_id, id)`.execute(db);

  await db.schema
    .createTable('order_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('position', 'bigserial', (c) => c.notNull())
    .addColumn('txid', 'bigint', (c) =>
      c.notNull().defaultTo(sql`pg_current_xact_id()::text::bigint`),
    )
    .addColumn('order_id', 'uuid', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addUniqueConstraint('order_events_order_version', ['order_id', 'version'])
    .execute();
  await sql`create index order_events_feed on order_events (txid, position)`.execute(db);
  await sql`create index order_events_occurred_at on order_events (occurred_at)`.execute(db);

  // what the feed's pruning passed: a cursor before it may have lost events (410)
  await db.schema
    .createTable('order_events_pruned')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('txid', 'bigint', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .execute();

  // The order as GET /orders/:id shows it (null members left out)
  await sql`
    create function order_event_data(o orders) returns jsonb language sql stable as $$
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

  await sql`
    create function order_events_created() returns trigger language plpgsql as $$
    begin
      insert into order_events (id, order_id, version, type, data)
      select 'evt_' || n.id || '_' || n.version, n.id, n.version, 'order.created',
             order_event_data(n)
      from inserted n;
      return null;
    end $$`.execute(db);
  // statement level: a batch of 500 rows is one insert of 500 events; ON CONFLICT DO NOTHING
  // rows are not in `inserted`
  await sql`
    create trigger orders_created after insert on orders
    referencing new table as inserted
    for each statement execute function order_events_created()`.execute(db);

  await sql`
    create function order_events_version() returns trigger language plpgsql as $$
    begin
      if new.status is distinct from old.status
         or (new.restocked_at is not null and old.restocked_at is null) then
        new.version := old.version + 1;
        new.updated_at := now();
      end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger orders_version before update on orders
    for each row execute function order_events_version()`.execute(db);

  await sql`
    create function order_events_changed() returns trigger language plpgsql as $$
    begin
      insert into order_events (id, order_id, version, type, data)
      values ('evt_' || new.id || '_' || new.version, new.id, new.version,
              case when new.status is distinct from old.status then 'order.' || new.status
                   else 'order.returned' end,
              order_event_data(new));
      return null;
    end $$`.execute(db);
  await sql`
    create trigger orders_changed after update on orders
    for each row when (new.version <> old.version)
    execute function order_events_changed()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists orders_changed on orders`.execute(db);
  await sql`drop trigger if exists orders_version on orders`.execute(db);
  await sql`drop trigger if exists orders_created on orders`.execute(db);
  await sql`drop function if exists order_events_changed()`.execute(db);
  await sql`drop function if exists order_events_version()`.execute(db);
  await sql`drop function if exists order_events_created()`.execute(db);
  await sql`drop function if exists order_event_data(orders)`.execute(db);
  await db.schema.dropTable('order_events_pruned').ifExists().execute();
  await db.schema.dropTable('order_events').ifExists().execute();
  await sql`drop index if exists orders_product_id`.execute(db);
  await sql`drop index if exists orders_updated_at`.execute(db);
  await db.schema.alterTable('orders').dropColumn('version').dropColumn('updated_at').execute();
}
