import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Payment notices handled once each, keyed by who sent them: (provider, id). The one key of
 * `webhook_deliveries` mixed two namespaces: Stripe's event ids were kept as `stripe:<evt_...>`
 * beside Standard Webhooks' `webhook-id`s as sent, so a Standard Webhooks delivery whose id was
 * `stripe:evt_X` took the place of Stripe's later event evt_X, which then got that delivery's
 * answer and was never handled.
 *
 * A new table, not a change of `webhook_deliveries`: migrations are additive (the previous
 * release's processes keep running against the migrated schema until they are replaced), and
 * they still write the old table. Its rows are copied here so a redelivery within the retention
 * gets its first answer; a later release drops it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payment_notices')
    // 'stripe' (POST /payments/stripe) or 'standard-webhooks' (POST /payments/webhook)
    .addColumn('provider', 'text', (c) => c.notNull())
    // the provider's id of the notice: Stripe's event id, or the `webhook-id`
    .addColumn('id', 'text', (c) => c.notNull())
    // the first delivery's answer (null only inside the transaction that handles it)
    .addColumn('status', 'integer')
    .addColumn('body', 'jsonb')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('payment_notices_pkey', ['provider', 'id'])
    .execute();
  // the sweep forgets notices past the providers' retry horizon
  await db.schema
    .createIndex('payment_notices_received_at')
    .on('payment_notices')
    .column('received_at')
    .execute();
  await sql`
    insert into payment_notices (provider, id, status, body, received_at)
    select case when id like 'stripe:%' then 'stripe' else 'standard-webhooks' end,
           case when id like 'stripe:%' then substr(id, 8) else id end,
           status, body, received_at
    from webhook_deliveries where status is not null
    on conflict do nothing`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payment_notices').ifExists().execute();
}
