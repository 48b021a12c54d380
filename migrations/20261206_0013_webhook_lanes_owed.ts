import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * Pruning keeps every order event a webhook lane still owes (docs/events.md#retention): for each
 * old event it asks whether a lane of its order is behind it. This index answers by order, among
 * the lanes owing something only (pending, waiting for a disabled endpoint, dead-lettered).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index webhook_lanes_owed on webhook_lanes (order_id, acked_version)
    where acked_version < wanted_version`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists webhook_lanes_owed`.execute(db);
}
