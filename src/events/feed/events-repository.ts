/**
 * The order events' SQL: the feed (events in the order of the transactions that wrote them,
 * shown only below the oldest transaction still running, so none can appear behind a cursor
 * already passed), an order's events after a version, and pruning past the retention.
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

/** An order's events after `version`, oldest first. */
export async function orderEventsAfter(
  db: Db,
  orderId: string,
  version: number,
): Promise<OrderEvent[]> {
  const rows = await db
    .selectFrom('order_events')
    .select(['id', 'txid', 'position', 'order_id', 'version', 'type', 'occurred_at', 'data'])
    .where('order_id', '=', orderId)
    .where('version', '>', version)
    .orderBy('version')
    .execute();
  return rows.map((row) => eventOf(row as EventRow));
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
 * pruning mark past them. @returns how many
 */
export async function pruneEvents(db: Db, hours: number, limit: number): Promise<number> {
  const r = await sql<{ n: string }>`
    with gone as (
      delete from order_events where (order_id, version) in (
        select order_id, version from order_events
        where occurred_at < now() - ${hours} * interval '1 hour'
        order by txid, position limit ${limit})
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

  orderEventsAfter(orderId: string, version: number): Promise<OrderEvent[]> {
    return orderEventsAfter(this.db, orderId, version);
  }

  prunedThrough(): Promise<FeedCursor | undefined> {
    return prunedThrough(this.db);
  }

  pruneEvents(hours: number, limit: number): Promise<number> {
    return pruneEvents(this.db, hours, limit);
  }
}
