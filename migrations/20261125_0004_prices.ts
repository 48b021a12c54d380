import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Prices: a seed may price its sale (an integer amount in the currency's minor unit, an ISO 4217
 * code). The price is kept per sale epoch, written before the epoch's stock is, so every order
 * of the epoch finds it; the order row copies the unit price, currency and total as it is
 * inserted, and the payment intent copies the total: a later reseed or price touches neither.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sale_prices')
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('unit_amount', 'bigint', (c) => c.notNull().check(sql`unit_amount >= 0`))
    .addColumn('currency', 'text', (c) => c.notNull().check(sql`currency ~ '^[A-Z]{3}$'`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('sale_prices_pkey', ['product_id', 'epoch'])
    .execute();

  await db.schema
    .alterTable('orders')
    .addColumn('unit_amount', 'bigint')
    .addColumn('currency', 'text')
    .addColumn('total_amount', 'bigint')
    .execute();
  await sql`alter table orders add constraint orders_price_whole
    check ((unit_amount is null) = (currency is null) and (unit_amount is null) = (total_amount is null))`.execute(
    db,
  );

  await db.schema
    .alterTable('payment_intents')
    .addColumn('amount', 'bigint')
    .addColumn('currency', 'text')
    .execute();

  // a provider's notice refused for its amount (or currency): the shop refunds these
  await db.schema
    .createTable('payment_refusals')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('order_id', 'uuid', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint')
    .addColumn('currency', 'text')
    .addColumn('expected_amount', 'bigint')
    .addColumn('expected_currency', 'text')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('payment_refusals_once', ['payment_id', 'order_id', 'reason'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_refusals').ifExists().execute();
  await db.schema
    .alterTable('payment_intents')
    .dropColumn('amount')
    .dropColumn('currency')
    .execute();
  await sql`alter table orders drop constraint if exists orders_price_whole`.execute(db);
  await db.schema
    .alterTable('orders')
    .dropColumn('unit_amount')
    .dropColumn('currency')
    .dropColumn('total_amount')
    .execute();
  await db.schema.dropTable('sale_prices').ifExists().execute();
}
