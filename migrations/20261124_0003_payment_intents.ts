import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Payments the provider verifies: the buyer's route starts a payment intent bound to one order
 * (server-minted id, the order's quantity, expiring at its pay_by); only the provider's signed
 * webhook naming that intent marks the order paid. Webhook deliveries are kept by their
 * `webhook-id` (Standard Webhooks) so a redelivery answers as the first did and changes nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payment_intents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // one intent per order: starting a payment again answers the same intent
    .addColumn('order_id', 'uuid', (c) => c.notNull().unique().references('orders.id'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity > 0`))
    // the order's pay_by: the provider must not charge it later
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // the first delivery's answer (null only inside the transaction that handles it)
    .addColumn('status', 'integer')
    .addColumn('body', 'jsonb')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // the sweep prunes deliveries past the provider's retry horizon
  await db.schema
    .createIndex('webhook_deliveries_received_at')
    .on('webhook_deliveries')
    .column('received_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').ifExists().execute();
  await db.schema.dropTable('payment_intents').ifExists().execute();
}
