import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * An order event is found by its order and version (unique, and the index its deliveries read),
 * not by its id: the id is a name made of those two (`evt_<order>_<version>`, by the triggers
 * that write every event), so its own unique index kept the same thing twice. That index cost
 * every sale, whether anyone reads its events or not: a random 42-byte key inserted per order,
 * ~4 us of PostgreSQL CPU per order on a fresh table, more as it grows (pruning now deletes by
 * order and version). The pair's index is the table's identity for logical replication.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table order_events drop constraint order_events_pkey`.execute(db);
  await sql`alter table order_events replica identity using index order_events_order_version`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table order_events replica identity default`.execute(db);
  await sql`alter table order_events add primary key (id)`.execute(db);
}
