/**
 * The order events' SQL: the feed (events in the order of the transactions that wrote them,
 * shown only below the oldest transaction still running, so none can appear behind a cursor
 * already passed), and pruning past the retention (never what a webhook endpoint is still owed). (What a lane is owed is read with the lane:
 * lanes/lane-reads-repository.ts.)
 */
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import type { EventType, FeedCursor, OrderEvent } from './cloud-event.js';

/** An order_events row as the queries select it. */
export interface EventRow {
  id: string;
  txid: string;
  position: string;
  order_id: string;
  version: number;
  type: string;
  occurred_at: Date;
  data: Record<string, unknown>;
}

export const eventOf = (row: EventRow): OrderEvent => ({
  id: row.id,
  orderId: row.order_id,
  version: row.version,
  type: row.type as EventType,
  occurredAt: row.occurred_at,
  data: row.data,
  cursor: { txid: BigInt(row.txid), position: BigInt(row.position) },
});

/**
 * Up to `limit` events after `cursor`, in feed order. An event is shown once every
 * transaction that began writing before its own has ended (committed or not): a later read
 * finds nothing new before the last event of this one.
 */
export async function eventsAfter(
  db: Db,
  cursor: FeedCursor,
  limit: number,
  /** false: the events without their `data` (the relay needs none) */
  withData = true,
): Promise<OrderEvent[]> {
  const r = await sql<EventRow>`
    select id, txid, position, order_id, version, type, occurred_at,
           ${withData ? sql`data` : sql`'{}'::jsonb as data`}
    from order_events
    where (txid, position) > (${String(cursor.txid)}::bigint, ${String(cursor.position)}::bigint)
      and txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
    order by txid, position
    limit ${limit}`.execute(db);
  return r.rows.map(eventOf);
}

/** The newest place pruning passed; undefined when nothing was pruned. */
export async function prunedThrough(db: Db): Promise<FeedCursor | undefined> {
  const row = await db
    .selectFrom('order_events_pruned')
    .select(['txid', 'position'])
    .where('id', '=', 1)
    .executeTakeFirst();
  return row && { txid: BigInt(row.txid), position: BigInt(row.position) };
}

/**
 * Deletes up to `limit` events older than `hours`, oldest in feed order first, and moves the
 * pruning mark past them; never one still owed to a webhook endpoint: not yet handed on by the
 * relay, or behind what a lane of an endpoint taking its type acknowledged (pending, waiting for
 * a disabled endpoint, or dead-lettered: a replay sends it). Such events stay past the retention
 * until delivered. @returns how many were deleted
 */
export async function pruneEvents(db: Db, hours: number, limit: number): Promise<number> {
  const r = await sql<{ n: string }>`
    with gone as (
      delete from order_events where (order_id, version) in (
        select e.order_id, e.version from order_events e
        where e.occurred_at < now() - ${hours} * interval '1 hour'
          and (e.txid, e.position) <= (select txid, position from webhook_relay where id = 1)
          and not exists (
            select 1 from webhook_lanes l
            join webhook_endpoints w on w.id = l.endpoint_id
            where l.order_id = e.order_id and l.acked_version < e.version
              and l.acked_version < l.wanted_version and e.type = any(w.types))
        order by e.txid, e.position limit ${limit})
      returning txid, position),
    mark as (
      insert into order_events_pruned (id, txid, position)
      select 1, txid, position from gone order by txid desc, position desc limit 1
      on conflict (id) do update set txid = excluded.txid, position = excluded.position
      where (excluded.txid, excluded.position)
        > (order_events_pruned.txid, order_events_pruned.position))
    select count(*) as n from gone`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

/** The events of one database: what the feed and the deliveries read. */
export class EventsRepository {
  constructor(private readonly db: Db) {}

  eventsAfter(cursor: FeedCursor, limit: number): Promise<OrderEvent[]> {
    return eventsAfter(this.db, cursor, limit);
  }

  prunedThrough(): Promise<FeedCursor | undefined> {
    return prunedThrough(this.db);
  }

  pruneEvents(hours: number, limit: number): Promise<number> {
    return pruneEvents(this.db, hours, limit);
  }
}
