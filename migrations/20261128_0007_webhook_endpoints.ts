import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Webhook endpoints and the delivery state of order events to them (docs/events.md#webhooks):
 *
 * - `webhook_endpoints`: a receiver URL, the event types it takes, its signing secret (and the
 *   one it had before a rotation, still signed with until `previous_secret_until`), active or
 *   disabled (by an admin, or by a 410).
 * - `webhook_lanes`: one per endpoint and order. The relay hands each new event of a subscribed
 *   type on by raising `wanted_version`; a delivery raises `acked_version` as the receiver
 *   acknowledges each event, in version order. A lane whose last retry failed is dead from
 *   `dead_version` on, until a replay.
 * - `webhook_relay`: how far in the feed the relay has handed events on.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('types', sql`text[]`, (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', 'timestamptz')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('active')
        .check(sql`status in ('active', 'disabled')`),
    )
    .addColumn('disabled_reason', 'text')
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('webhook_lanes')
    .addColumn('endpoint_id', 'text', (c) =>
      c.notNull().references('webhook_endpoints.id').onDelete('cascade'),
    )
    .addColumn('order_id', 'uuid', (c) => c.notNull())
    .addColumn('wanted_version', 'integer', (c) => c.notNull())
    .addColumn('acked_version', 'integer', (c) => c.notNull().defaultTo(0))
    // when the oldest event not yet acknowledged was committed (null: nothing pending)
    .addColumn('pending_since', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('enqueued_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('dead_version', 'integer')
    .addColumn('dead_at', 'timestamptz')
    .addPrimaryKeyConstraint('webhook_lanes_pkey', ['endpoint_id', 'order_id'])
    .execute();
  await sql`create index webhook_lanes_pending on webhook_lanes (endpoint_id, pending_since)
    where acked_version < wanted_version and dead_version is null`.execute(db);
  await sql`create index webhook_lanes_dead on webhook_lanes (endpoint_id, dead_at)
    where dead_version is not null`.execute(db);

  await db.schema
    .createTable('webhook_relay')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('txid', 'bigint', (c) => c.notNull())
    .addColumn('position', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into webhook_relay (id, txid, position) values (1, 0, 0)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_relay').ifExists().execute();
  await db.schema.dropTable('webhook_lanes').ifExists().execute();
  await db.schema.dropTable('webhook_endpoints').ifExists().execute();
}
