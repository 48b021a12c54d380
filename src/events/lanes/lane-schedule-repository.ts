/**
 * When each lane is tried next, in PostgreSQL: a failed attempt (counted, or not when it came
 * before the lane's schedule), lanes held back while their endpoint is quiet, the lanes due now
 * and those a lost job left stranded (each run of the relay gives them a job of their own), and
 * what brings waiting lanes forward: a probe of an endpoint found down, an admin's "retry now",
 * and (in the acknowledgement's statement, lanes-repository.ts) an endpoint answering again.
 * Nothing brings a lane before its receiver's Retry-After (`not_before`).
 */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/index.js';
import type { LaneRef } from './lane.js';

/**
 * An endpoint found down this long, then acknowledging an event, is back: its waiting lanes are
 * brought forward. Shorter outages (a hang between answers) leave the schedule alone.
 */
export const RECOVERY_AFTER_MS = 1_000;

export interface Failure {
  /** failed attempts counted for the event now due */
  attempts: number;
  error: string;
  /** when it is tried next */
  nextAt: Date;
  /** when the schedule tries it (later than `nextAt` only for a lane brought forward) */
  scheduledAt: Date;
  /** the receiver's Retry-After; null when it gave none */
  notBefore: Date | null;
  /** no answer, 502, 503 or 504: the endpoint looks down (failing since now, if not already) */
  endpointDown: boolean;
}

/**
 * An UPDATE (for a CTE) that brings forward every waiting lane `l` matching `where`: tried now,
 * or at its receiver's Retry-After; when the schedule tries it is kept.
 */
export function bringForward(where: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    update webhook_lanes l set next_attempt_at = greatest(now(), coalesce(l.not_before, now()))
    where ${where}
      and l.next_attempt_at > greatest(now(), coalesce(l.not_before, now()))
      and l.dead_version is null and l.acked_version < l.wanted_version
    returning l.endpoint_id`;
}

export async function recordFailure(db: Db, ref: LaneRef, failure: Failure): Promise<void> {
  await sql`
    with lane as (
      update webhook_lanes
      set attempts = ${failure.attempts}, last_error = ${failure.error.slice(0, 500)},
        next_attempt_at = ${failure.nextAt.toISOString()}::timestamptz,
        scheduled_at = ${failure.scheduledAt.toISOString()}::timestamptz,
        not_before = ${failure.notBefore?.toISOString() ?? null}::timestamptz
      where endpoint_id = ${ref.endpointId} and subject = ${ref.subject}
      returning endpoint_id)
    update webhook_endpoints set failing_since = now()
    where ${failure.endpointDown} and id = ${ref.endpointId} and failing_since is null`.execute(db);
}

/**
 * Lanes held back (their endpoint is quiet, so found down): each tried again after its delay,
 * with why. Not an attempt: their count is kept; the schedule tries each at the hold's end, or
 * later when the lane was brought forward ahead of a later schedule.
 */
export async function recordHolds(
  db: Db,
  held: ReadonlyArray<LaneRef & { delayMs: number }>,
  why: string,
): Promise<void> {
  if (held.length === 0) return;
  await sql`
    with lanes as (
      update webhook_lanes l
      set next_attempt_at = now() + h.delay * interval '1 millisecond', last_error = ${why},
        -- a lane brought forward keeps its schedule's time when that is later than the hold's
        -- end; else the schedule tries it at the hold's end: a probe before then that fails is
        -- early, not counted (kept, an earlier time let the next probe count as an attempt)
        scheduled_at = greatest(l.scheduled_at, now() + h.delay * interval '1 millisecond')
      from unnest(${held.map((h) => h.endpointId)}::text[], ${held.map((h) => h.subject)}::text[],
        ${held.map((h) => h.delayMs)}::int[]) as h(endpoint_id, subject, delay)
      where l.endpoint_id = h.endpoint_id and l.subject = h.subject
        and l.dead_version is null and l.acked_version < l.wanted_version
      returning l.endpoint_id)
    update webhook_endpoints set failing_since = now()
    where id in (select endpoint_id from lanes) and failing_since is null`.execute(db);
}

/**
 * Up to `limit` live lanes of active endpoints due by now, earliest first, not queued since,
 * marked queued now: each is taken by one relay run, once per time it comes due.
 */
export async function dueNow(db: Db, limit: number): Promise<LaneRef[]> {
  return refs(
    await sql<{ endpoint_id: string; subject: string }>`
      update webhook_lanes l set enqueued_at = now()
      from (
        select l2.endpoint_id, l2.subject from webhook_lanes l2
        join webhook_endpoints e on e.id = l2.endpoint_id and e.status = 'active'
        where l2.next_attempt_at <= now() and l2.dead_version is null
          and l2.enqueued_at < l2.next_attempt_at and l2.acked_version < l2.wanted_version
        order by l2.next_attempt_at
        limit ${limit}
        for update of l2 skip locked) due
      where l.endpoint_id = due.endpoint_id and l.subject = due.subject
      returning l.endpoint_id, l.subject`.execute(db),
  );
}

/**
 * Up to `limit` live lanes of active endpoints with something due and no delivery running or
 * waiting for them (a job lost with a crash, a replay, an endpoint enabled again), marked
 * queued now. @param idleMs - how long a lane must have been left alone
 */
export async function stranded(db: Db, idleMs: number, limit: number): Promise<LaneRef[]> {
  return refs(
    await sql<{ endpoint_id: string; subject: string }>`
      update webhook_lanes l set enqueued_at = now()
      from (
        select l2.endpoint_id, l2.subject from webhook_lanes l2
        join webhook_endpoints e on e.id = l2.endpoint_id and e.status = 'active'
        where l2.acked_version < l2.wanted_version and l2.dead_version is null
          and l2.enqueued_at < now() - ${idleMs} * interval '1 millisecond'
          and (l2.next_attempt_at is null
               or l2.next_attempt_at < now() - ${idleMs} * interval '1 millisecond')
        limit ${limit}
        for update of l2 skip locked) due
      where l.endpoint_id = due.endpoint_id and l.subject = due.subject
      returning l.endpoint_id, l.subject`.execute(db),
  );
}

/**
 * Each active endpoint found down for `everyMs` and not probed for as long gets its
 * earliest waiting lane brought forward (the next relay run gives it its job): one attempt, not
 * counted if it fails, that finds out whether the endpoint is back. @returns the lanes probed
 */
export async function probe(db: Db, everyMs: number): Promise<LaneRef[]> {
  return refs(
    await sql<{ endpoint_id: string; subject: string }>`
      with due as (
        update webhook_endpoints e set probed_at = now()
        where e.status = 'active'
          and e.failing_since < now() - ${everyMs} * interval '1 millisecond'
          and (e.probed_at is null or e.probed_at < now() - ${everyMs} * interval '1 millisecond')
        returning e.id),
      first as (
        select distinct on (l.endpoint_id) l.endpoint_id, l.subject from webhook_lanes l
        join due on due.id = l.endpoint_id
        where l.next_attempt_at > now() and l.dead_version is null
          and l.acked_version < l.wanted_version
          and (l.not_before is null or l.not_before <= now())
        order by l.endpoint_id, l.next_attempt_at)
      update webhook_lanes l set next_attempt_at = now()
      from first
      where l.endpoint_id = first.endpoint_id and l.subject = first.subject
      returning l.endpoint_id, l.subject`.execute(db),
  );
}

/** An admin's "retry now": every waiting lane of the endpoint is tried now. @returns how many */
export async function retryNow(db: Db, endpointId: string): Promise<number> {
  const r = await sql<{ n: string }>`
    with moved as (${bringForward(sql`l.endpoint_id = ${endpointId}`)})
    select count(*) as n from moved`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

const refs = (result: { rows: Array<{ endpoint_id: string; subject: string }> }): LaneRef[] =>
  result.rows.map((row) => ({ endpointId: row.endpoint_id, subject: row.subject }));
