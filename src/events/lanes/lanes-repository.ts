/**
 * The delivery lanes' SQL (one lane per endpoint and subject: an order, or a product event's
 * subject): the relay's hand-on (in one transaction with its cursor, one relay at a time), a
 * delivery's acknowledgement (only from the version it read: a replay that moved the lane
 * meanwhile wins), a dead letter, replays; and, by lane-schedule-repository.ts and
 * lane-reads-repository.ts, when each lane is tried next and what it is owed.
 */
import { sql, type Transaction } from 'kysely';
import type { Database, Db } from '../../db/index.js';
import {
  eventsAfter,
  feedHorizon,
  type EventType,
  type FeedCursor,
  type FeedEvent,
} from '../feed/index.js';
import { deadLetters, dueLanes, type DeadLetter } from './lane-reads-repository.js';
import {
  bringForward,
  dueNow,
  probe,
  recordFailure,
  recordHolds,
  RECOVERY_AFTER_MS,
  retryNow,
  stranded,
  type Failure,
} from './lane-schedule-repository.js';
import type { DueLane, Lane, LaneRef } from './lane.js';

export type { DeadLetter, DueLane, Failure, Lane, LaneRef };

/** A receiver's acknowledgement, for the lane's compare-and-set from the version it read. */
export interface Ack extends LaneRef {
  from: number;
  version: number;
  /** when the lane's next event (not yet acknowledged) was committed; null when none */
  nextPendingSince: Date | null;
}

export interface HandOn {
  /** false: another relay holds the cursor */
  ran: boolean;
  events: number;
  /** live lanes of active endpoints given something new: their deliveries are due now */
  lanes: LaneRef[];
}

export class LanesRepository {
  constructor(private readonly db: Db) {}

  /** The feed's horizon now: read before the endpoints a hand-on takes (handOn). */
  horizon(): Promise<bigint> {
    return feedHorizon(this.db);
  }

  /**
   * Hands the next `limit` events of the feed on to the endpoints that take their type, and moves
   * the relay's cursor past them, in one transaction that one relay at a time may hold. With no
   * endpoint at all, nobody takes any: the cursor moves past every event shown now in one
   * statement that reads none (`events` then counts 1 when it moved, 0 when there was nothing).
   * Only events below `horizon` are handed on: read it (horizon()) before the endpoints, so an
   * endpoint registered after they were read is handed every event committed after it.
   */
  handOn(
    endpoints: ReadonlyArray<{ id: string; types: readonly EventType[] }>,
    limit: number,
    horizon?: bigint,
  ): Promise<HandOn> {
    return this.db.transaction().execute(async (tx) => {
      const at = await sql<{ txid: string; position: string }>`
        select txid, position from webhook_relay where id = 1 for update skip locked`.execute(tx);
      if (!at.rows[0]) return { ran: false, events: 0, lanes: [] };
      const cursor = { txid: BigInt(at.rows[0].txid), position: BigInt(at.rows[0].position) };
      if (endpoints.length === 0)
        return { ran: true, events: await skipAll(tx, cursor, horizon), lanes: [] };
      const events = await eventsAfter(tx, cursor, limit, false, horizon);
      if (events.length === 0) return { ran: true, events: 0, lanes: [] };
      const wanted = lanesFor(events, endpoints);
      const lanes = wanted.length ? await upsertLanes(tx, wanted) : [];
      const last = events.at(-1)!.cursor;
      await tx
        .updateTable('webhook_relay')
        .set({ txid: String(last.txid), position: String(last.position) })
        .where('id', '=', 1)
        .execute();
      return { ran: true, events: events.length, lanes };
    });
  }

  /**
   * Receivers acknowledged these: each lane moves to `version` only from the `from` its delivery
   * read (a replay that moved it meanwhile wins), all in one statement, which also clears the
   * failing mark of their endpoints. One found down for RECOVERY_AFTER_MS or longer is back: its
   * other waiting lanes are brought forward. @returns the lanes moved, as `<endpoint> <subject>`
   */
  async ackMany(acks: readonly Ack[]): Promise<Set<string>> {
    if (acks.length === 0) return new Set();
    const r = await sql<{ endpoint_id: string; subject: string | null; back: boolean }>`
      with acked as (
        update webhook_lanes l set acked_version = a.version, attempts = 0, last_error = null,
          next_attempt_at = null, scheduled_at = null, not_before = null,
          pending_since = case when a.version >= l.wanted_version then null
            else coalesce(a.next, l.pending_since) end
        from unnest(${acks.map((k) => k.endpointId)}::text[],
          ${acks.map((k) => k.subject)}::text[], ${acks.map((k) => k.from)}::int[],
          ${acks.map((k) => k.version)}::int[],
          ${acks.map((k) => k.nextPendingSince?.toISOString() ?? null)}::timestamptz[])
          as a(endpoint_id, subject, from_version, version, next)
        where l.endpoint_id = a.endpoint_id and l.subject = a.subject
          and l.acked_version = a.from_version and l.dead_version is null
        returning l.endpoint_id, l.subject),
      answered as (
        update webhook_endpoints e set failing_since = null, probed_at = null
        from webhook_endpoints was
        where was.id = e.id and e.id in (select endpoint_id from acked)
          and e.failing_since is not null
        returning e.id,
          was.failing_since < now() - ${RECOVERY_AFTER_MS} * interval '1 millisecond' as back)
      select endpoint_id, subject, false as back from acked
      union all select id, null, back from answered`.execute(this.db);
    const back = r.rows.filter((row) => row.back).map((row) => row.endpoint_id);
    // rare (an endpoint back after an outage): a statement of its own, off the acks' path
    if (back.length) {
      await sql`with moved as (${bringForward(sql`l.endpoint_id = any(${back}::text[])`)})
        select 1`.execute(this.db);
    }
    return new Set(
      r.rows
        .filter((row) => row.subject !== null)
        .map((row) => `${row.endpoint_id} ${row.subject}`),
    );
  }

  /** The last retry failed: the lane is dead from `version` on, until a replay. */
  async markDead(ref: LaneRef, version: number, attempts: number, error: string): Promise<void> {
    await this.db
      .updateTable('webhook_lanes')
      .set({
        dead_version: version,
        dead_at: sql`now()`,
        attempts,
        last_error: error.slice(0, 500),
        next_attempt_at: null,
        scheduled_at: null,
        not_before: null,
      })
      .where('endpoint_id', '=', ref.endpointId)
      .where('subject', '=', ref.subject)
      .execute();
  }

  /** Nothing of the lane's types is left past `from`: it is caught up. */
  async catchUp(ref: LaneRef, from: number): Promise<void> {
    await this.db
      .updateTable('webhook_lanes')
      .set({
        acked_version: sql`wanted_version`,
        pending_since: null,
        attempts: 0,
        last_error: null,
        next_attempt_at: null,
        scheduled_at: null,
        not_before: null,
      })
      .where('endpoint_id', '=', ref.endpointId)
      .where('subject', '=', ref.subject)
      .where('acked_version', '=', from)
      .execute();
  }

  /**
   * Every event of `types` after `from` is due again on the endpoint's lanes (dead ones live
   * again), from each subject's earliest such version. @returns how many lanes, and how many of
   * them are orders'
   */
  async replay(
    endpointId: string,
    types: readonly EventType[],
    from: FeedCursor,
  ): Promise<{ lanes: number; orders: number }> {
    const after = sql`> (${String(from.txid)}::bigint, ${String(from.position)}::bigint)`;
    const horizon = sql`pg_snapshot_xmin(pg_current_snapshot())::text::bigint`;
    const r = await sql<{ lanes: string; orders: string }>`
      with events as (
        select o.order_id::text as subject, o.version as sequence, o.occurred_at
        from order_events o
        where (o.txid, o.position) ${after} and o.txid < ${horizon}
          and o.type = any(${[...types]}::text[])
        union all
        select p.subject, p.sequence, p.occurred_at from product_events p
        where (p.txid, p.position) ${after} and p.txid < ${horizon}
          and p.type = any(${[...types]}::text[])),
      due as (
        select subject, min(sequence) as first, max(sequence) as last, min(occurred_at) as since
        from events group by subject),
      moved as (
        insert into webhook_lanes (endpoint_id, subject, wanted_version, acked_version,
                                   pending_since, enqueued_at)
        select ${endpointId}, subject, last, first - 1, since, now() - interval '1 hour'
        from due
        on conflict (endpoint_id, subject) do update set
          wanted_version = greatest(webhook_lanes.wanted_version, excluded.wanted_version),
          acked_version = least(webhook_lanes.acked_version, excluded.acked_version),
          pending_since = least(webhook_lanes.pending_since, excluded.pending_since),
          attempts = 0, last_error = null, next_attempt_at = null, scheduled_at = null,
          not_before = null,
          dead_version = null, dead_at = null, enqueued_at = excluded.enqueued_at
        returning subject)
      select count(*) as lanes,
        count(*) filter (where subject_order_id(subject) is not null) as orders
      from moved`.execute(this.db);
    return { lanes: Number(r.rows[0]?.lanes ?? 0), orders: Number(r.rows[0]?.orders ?? 0) };
  }

  /** A failed attempt, with when the lane is tried next. */
  failed(ref: LaneRef, failure: Failure): Promise<void> {
    return recordFailure(this.db, ref, failure);
  }

  /** Lanes held back: each tried again after its delay; not an attempt. */
  hold(held: ReadonlyArray<LaneRef & { delayMs: number }>, why: string): Promise<void> {
    return recordHolds(this.db, held, why);
  }

  /** Lanes due by now, each marked queued (the relay gives them their own jobs). */
  due(limit: number): Promise<LaneRef[]> {
    return dueNow(this.db, limit);
  }

  /** Lanes a lost job left with something due, left alone `idleMs`, marked queued. */
  stranded(idleMs: number, limit: number): Promise<LaneRef[]> {
    return stranded(this.db, idleMs, limit);
  }

  /** One waiting lane of each endpoint found down, brought forward every `everyMs`. */
  probe(everyMs: number): Promise<LaneRef[]> {
    return probe(this.db, everyMs);
  }

  /** Every waiting lane of the endpoint tried now (its Retry-After kept). @returns how many */
  retryNow(endpointId: string): Promise<number> {
    return retryNow(this.db, endpointId);
  }

  dueLanes(endpointId: string, subjects: readonly string[], types: readonly EventType[]) {
    return dueLanes(this.db, endpointId, subjects, types);
  }

  deadLetters(endpointId: string, limit: number): Promise<DeadLetter[]> {
    return deadLetters(this.db, endpointId, limit);
  }
}

/**
 * Moves the relay's cursor to the last event shown now (the feed's rule: below the oldest
 * transaction still running), reading the feed's index from its end: one row, however many
 * events a sale wrote (an index's end per table). @returns 1 when it moved, 0 when nothing new was shown
 */
async function skipAll(
  tx: Transaction<Database>,
  cursor: FeedCursor,
  horizon: bigint | undefined,
): Promise<number> {
  const r = await sql`
    update webhook_relay r set txid = last.txid, position = last.position
    from (select txid, position from (
            (${lastShown('order_events', cursor, horizon)})
            union all (${lastShown('product_events', cursor, horizon)})
          ) shown order by txid desc, position desc limit 1) last
    where r.id = 1`.execute(tx);
  return Number(r.numAffectedRows ?? 0);
}

/** The last event of `table` after `cursor` that the feed shows now (or below `horizon`). */
const lastShown = (
  table: 'order_events' | 'product_events',
  cursor: FeedCursor,
  horizon: bigint | undefined,
) => sql`
  select txid, position from ${sql.table(table)}
  where (txid, position) > (${String(cursor.txid)}::bigint, ${String(cursor.position)}::bigint)
    and txid < ${horizon === undefined ? sql`pg_snapshot_xmin(pg_current_snapshot())::text::bigint` : sql`${String(horizon)}::bigint`}
  order by txid desc, position desc limit 1`;

/** Per endpoint and subject, the newest version of the endpoint's types and when the first was. */
function lanesFor(
  events: readonly FeedEvent[],
  endpoints: ReadonlyArray<{ id: string; types: readonly EventType[] }>,
) {
  const lanes = new Map<
    string,
    { endpointId: string; subject: string; version: number; since: Date }
  >();
  for (const endpoint of endpoints) {
    for (const event of events) {
      if (!endpoint.types.includes(event.type)) continue;
      const key = `${endpoint.id} ${event.subject}`;
      const lane = lanes.get(key);
      if (!lane) {
        lanes.set(key, {
          endpointId: endpoint.id,
          subject: event.subject,
          version: event.sequence,
          since: event.occurredAt,
        });
      } else lane.version = Math.max(lane.version, event.sequence);
    }
  }
  return [...lanes.values()];
}

/**
 * Raises each lane to what was handed on. @returns the lanes a batch is to deliver now: live, not
 * waiting for a next attempt, of an endpoint active as this statement reads it. A lane of a
 * disabled endpoint is marked as queued long ago, so that the relay run after an enable finds it
 * stranded, whenever the enable commits.
 */
async function upsertLanes(
  tx: Transaction<Database>,
  lanes: ReadonlyArray<{ endpointId: string; subject: string; version: number; since: Date }>,
): Promise<LaneRef[]> {
  const r = await sql<{ endpoint_id: string; subject: string; deliver: boolean }>`
    insert into webhook_lanes (endpoint_id, subject, wanted_version, pending_since, enqueued_at)
    select l.endpoint_id, l.subject, l.version, l.since,
      case when e.status = 'active' then now() else now() - interval '1 hour' end
    from unnest(${lanes.map((l) => l.endpointId)}::text[],
      ${lanes.map((l) => l.subject)}::text[], ${lanes.map((l) => l.version)}::int[],
      ${lanes.map((l) => l.since.toISOString())}::timestamptz[])
      as l(endpoint_id, subject, version, since)
    join webhook_endpoints e on e.id = l.endpoint_id
    on conflict (endpoint_id, subject) do update set
      wanted_version = greatest(webhook_lanes.wanted_version, excluded.wanted_version),
      pending_since = case when webhook_lanes.acked_version >= webhook_lanes.wanted_version
        then excluded.pending_since
        else coalesce(webhook_lanes.pending_since, excluded.pending_since) end,
      -- a lane waiting for its next attempt keeps its mark: it is due by that, not by this
      enqueued_at = case when webhook_lanes.next_attempt_at is null then excluded.enqueued_at
        else webhook_lanes.enqueued_at end
    returning endpoint_id, subject,
      dead_version is null and next_attempt_at is null and exists (
        select 1 from webhook_endpoints w
        where w.id = webhook_lanes.endpoint_id and w.status = 'active') as deliver`.execute(tx);
  return r.rows
    .filter((row) => row.deliver)
    .map((row) => ({ endpointId: row.endpoint_id, subject: row.subject }));
}
