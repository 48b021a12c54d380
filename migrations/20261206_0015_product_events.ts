import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Events that are not an order's (docs/events.md#events-that-are-not-an-orders): a feature
 * publishes events of a product (a draw, a waiting room), each with a subject it chooses, on the
 * same feed and to the same webhook endpoints as the order events.
 *
 * - `product_events`: written by application code in the producer's transaction, keyed by the
 *   producer's id (publishing again is a no-op). Their feed place shares the order events'
 *   sequence, so (txid, position) orders both tables as one feed under one cursor.
 * - `product_event_subjects`: the last sequence number given to each subject. Publishing locks
 *   the subject's row until its transaction ends, so a subject's numbers follow commit order.
 * - `webhook_lanes.order_id` becomes `subject` (text): a lane is one endpoint and one subject. An
 *   order's lanes keep working: their subject is the order id's text; `subject_order_id` turns it
 *   back into the uuid to reach `order_events` by its index. A subject of a product event is
 *   never a uuid, so the two never share a lane.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function subject_order_id(subject text) returns uuid
    language sql immutable parallel safe as $$
      select case when subject ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        then subject::uuid end
    $$`.execute(db);

  await db.schema
    .createTable('product_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('position', 'bigint', (c) =>
      c.notNull().defaultTo(sql`nextval('order_events_position_seq')`),
    )
    .addColumn('txid', 'bigint', (c) =>
      c.notNull().defaultTo(sql`pg_current_xact_id()::text::bigint`),
    )
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) =>
      c.notNull().check(sql`subject_order_id(lower(subject)) is null`),
    )
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addUniqueConstraint('product_events_subject_sequence', ['subject', 'sequence'])
    .execute();
  await sql`create index product_events_feed on product_events (txid, position)`.execute(db);
  await sql`create index product_events_occurred_at on product_events (occurred_at)`.execute(db);

  await db.schema
    .createTable('product_event_subjects')
    .addColumn('subject', 'text', (c) => c.primaryKey())
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .execute();

  await sql`alter table webhook_lanes rename column order_id to subject`.execute(db);
  await sql`alter table webhook_lanes alter column subject type text using subject::text`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from webhook_lanes where subject_order_id(subject) is null`.execute(db);
  await sql`alter table webhook_lanes alter column subject type uuid using subject::uuid`.execute(
    db,
  );
  await sql`alter table webhook_lanes rename column subject to order_id`.execute(db);
  await db.schema.dropTable('product_event_subjects').ifExists().execute();
  await db.schema.dropTable('product_events').ifExists().execute();
  await sql`drop function if exists subject_order_id(text)`.execute(db);
}
