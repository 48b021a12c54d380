import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * The operators' audit log: every change an admin makes to a sale (a seed, a pause, units added,
 * the room's pace...), who made it, when, and what it did. A row is written before the change
 * runs (outcome `started`) and completed after it (`done`, `refused`, `failed`), so no change
 * runs unrecorded: a process that died mid-change leaves its row `started`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('admin_audit')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // how the admin came in: the bearer token, a dashboard session, the CLI
    .addColumn('via', 'text', (c) => c.notNull().check(sql`via in ('token', 'session', 'cli')`))
    // the session's id prefix, or the CLI's OS user
    .addColumn('session', 'text')
    // the name the operator gave (X-Operator, --operator): declared, not proven
    .addColumn('operator', 'text')
    .addColumn('address', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text')
    .addColumn('epoch', 'integer')
    .addColumn('request', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('outcome', 'text', (c) =>
      c
        .notNull()
        .defaultTo('started')
        .check(sql`outcome in ('started', 'done', 'refused', 'failed')`),
    )
    .addColumn('result', 'jsonb')
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('admin_audit_product')
    .on('admin_audit')
    .columns(['product_id', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('admin_audit').execute();
}
