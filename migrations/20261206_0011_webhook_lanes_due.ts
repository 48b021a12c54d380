import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * A lane whose attempt failed waits in PostgreSQL for its next one (`next_attempt_at`), not in a
 * delayed BullMQ job: each relay run gives a job to the lanes due by then (docs/events.md). This
 * index finds them, earliest first, without reading every pending lane.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index webhook_lanes_due on webhook_lanes (next_attempt_at)
    where next_attempt_at is not null and dead_version is null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists webhook_lanes_due`.execute(db);
}
