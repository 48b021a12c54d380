import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * What brings a recovering endpoint's waiting lanes forward (docs/events.md#recovery):
 *
 * - `webhook_lanes.scheduled_at`: when the retry schedule tries the lane next. `next_attempt_at`
 *   may be earlier (brought forward: the endpoint answered again, its probe, an admin's "retry
 *   now"); an attempt before `scheduled_at` that fails leaves the lane where the schedule had it
 *   (not counted).
 * - `webhook_lanes.not_before`: the receiver's Retry-After: nothing brings the lane before it.
 * - `webhook_endpoints.failing_since`: its attempts have found it down (no answer, 502, 503,
 *   504) since then, with no acknowledgement; `probed_at`: when one of its lanes was last brought
 *   forward to find out whether it is back.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_lanes')
    .addColumn('scheduled_at', 'timestamptz')
    .addColumn('not_before', 'timestamptz')
    .execute();
  await sql`update webhook_lanes set scheduled_at = next_attempt_at
    where next_attempt_at is not null`.execute(db);
  await sql`create index webhook_lanes_waiting on webhook_lanes (endpoint_id, next_attempt_at)
    where next_attempt_at is not null and dead_version is null`.execute(db);
  await db.schema
    .alterTable('webhook_endpoints')
    .addColumn('failing_since', 'timestamptz')
    .addColumn('probed_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists webhook_lanes_waiting`.execute(db);
  await db.schema
    .alterTable('webhook_lanes')
    .dropColumn('scheduled_at')
    .dropColumn('not_before')
    .execute();
  await db.schema
    .alterTable('webhook_endpoints')
    .dropColumn('failing_since')
    .dropColumn('probed_at')
    .execute();
}
