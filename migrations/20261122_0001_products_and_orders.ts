import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('products')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('total', 'integer', (c) => c.notNull().check(sql`total >= 0`))
    .addColumn('segments', 'integer', (c) => c.notNull().check(sql`segments between 1 and 1024`))
    .addColumn('strategy', 'text', (c) =>
      c.notNull().check(sql`strategy in ('global', 'segmented', 'lockfree')`),
    )
    .addColumn('limit_per_user', 'integer', (c) => c.notNull().check(sql`limit_per_user >= 1`))
    .addColumn('starts_at', 'timestamptz')
    .addColumn('ends_at', 'timestamptz')
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('orders')
    // The order id is minted before the deduct and recorded by it in the segment outbox.
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    // `<product>:<epoch>:<order id>`: the same deduct always yields the same key, so at-least-once
    // delivery + INSERT ... ON CONFLICT (idempotency_key) DO NOTHING = exactly one row.
    .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id'))
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity > 0`))
    .addColumn('segment', 'integer', (c) => c.notNull())
    .addColumn('home_segment', 'integer', (c) => c.notNull())
    .addColumn('outbox_id', 'text', (c) => c.notNull())
    .addColumn('deducted_at', 'timestamptz', (c) => c.notNull())
    .addColumn('persisted_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createIndex('orders_product_user')
    .on('orders')
    .columns(['product_id', 'user_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('orders').execute();
  await db.schema.dropTable('products').execute();
}
