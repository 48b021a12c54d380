import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Payment windows: a product may give buyers `pay_within_seconds` to pay; its orders then go
 * awaiting_payment -> paid | cancelled | expired. Sales without a window stay 'final'.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('products')
    .addColumn('pay_within_seconds', 'integer', (c) => c.check(sql`pay_within_seconds >= 1`))
    .execute();

  await db.schema
    .alterTable('orders')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('final')
        .check(sql`status in ('final', 'awaiting_payment', 'paid', 'cancelled', 'expired')`),
    )
    .addColumn('pay_by', 'timestamptz')
    // the payment that settled it (pay route or webhook): the same id again is the same answer
    .addColumn('payment_id', 'text', (c) => c.unique())
    // when it left awaiting_payment
    .addColumn('closed_at', 'timestamptz')
    // cancelled / expired: when its units were back on sale (null: still to return)
    .addColumn('restocked_at', 'timestamptz')
    .execute();
  await sql`alter table orders add constraint orders_pay_by_when_awaiting
    check (status <> 'awaiting_payment' or pay_by is not null)`.execute(db);
  // the expiry sweep: overdue orders still awaiting payment
  await db.schema
    .createIndex('orders_status_pay_by')
    .on('orders')
    .columns(['status', 'pay_by'])
    .execute();
  // units of closed orders not yet back on sale (a crash between the two steps)
  await sql`create index orders_returning on orders (closed_at)
    where status in ('cancelled', 'expired') and restocked_at is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists orders_returning`.execute(db);
  await db.schema.dropIndex('orders_status_pay_by').ifExists().execute();
  await sql`alter table orders drop constraint if exists orders_pay_by_when_awaiting`.execute(db);
  await db.schema
    .alterTable('orders')
    .dropColumn('status')
    .dropColumn('pay_by')
    .dropColumn('payment_id')
    .dropColumn('closed_at')
    .dropColumn('restocked_at')
    .execute();
  await db.schema.alterTable('products').dropColumn('pay_within_seconds').execute();
}
