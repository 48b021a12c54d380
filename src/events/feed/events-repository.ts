/**
 * The feed's SQL. Events are kept in two tables: order events in `order_events` (the triggers on
 * `orders` write them), product events in `product_events` (product-events.ts publishes them).
 * Both take their feed place from one sequence, so (txid, position) orders them as one feed; the
 * queries here read the two as one: the feed (events in the order of the transactions that wrote
 * them, shown only below the oldest transaction still running, so none can appear behind a cursor
 * already passed), a subject's events (for the lanes: lanes/lane-reads-repository.ts), and
 * pruning past the retention (never what a webhook endpoint is still owed).
 */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/index.js';
import type { FeedCursor, FeedEvent } from './cloud-event.js';
import { EVENT_SOURCE, type EventType } from './event-types.js';

/** An event as the queries select it, from either table. */
export interface EventRow {
  id: string;
  txid: string;
  position: string;
  source: string;
  subject: string;
  sequence: number;
  type: string;
  product_id: string | null;
  occurred_at: Date;
  data: Record<string, unknown>;
}

export const eventOf = (row: EventRow): FeedEvent => ({
  id: row.id,
  source: row.source,
  subject: row.subject,
  sequence: row.sequence,
  type: row.type as EventType,
  productId: row.product_id,
  occurredAt: row.occurred_at,
  data: row.data,
  cursor: { txid: BigInt(row.txid), position: BigInt(row.position) },
});

/** An order event (`o`) as an EventRow. @param withData - false: `{}` (the relay needs none) */
const orderEventColumns = (withData = true) => sql`
  o.id, o.txid, o.position, ${EVENT_SOURCE}::text as source, o.order_id::text as subject,
  o.version as sequence, o.type, null::text as product_id, o.occurred_at,
  ${withData ? sql`o.data` : sql`'{}'::jsonb as data`}`;

/** A product event (`p`) as an EventRow. */
const productEventColumns = (withData = true) => sql`
  p.id, p.txid, p.position, p.source, p.subject, p.sequence, p.type, p.product_id,
  p.occurred_at, ${withData ? sql`p.data` : sql`'{}'::jsonb as data`}`;

/** `(txid, position)` of `alias` after the cursor. */
const afterCursor = (alias: 'o' | 'p', cursor: FeedCursor) =>
  sql`(${sql.ref(`${alias}.txid`)}, ${sql.ref(`${alias}.position`)})
    > (${String(cursor.txid)}::bigint, ${String(cursor.position)}::bigint)`;

/**
 * Written by a transaction that began before every one still running (the feed's horizon), now
 * or at `horizon` (a horizon read earlier: what a reader knew then is all it acts on).
 */
const belowHorizon = (alias: 'o' | 'p', horizon?: bigint) =>
  horizon === undefined
    ? sql`${sql.ref(`${alias}.txid`)} < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
    : sql`${sql.ref(`${alias}.txid`)} < ${String(horizon)}::bigint`;

/**
 * The events of `subject` (an SQL expression: a lane's column) whose sequence passes `where`, of
 * `types` when given, from both tables: for a lateral join. An order's subject (a uuid) reaches
 * `order_events` by its (order_id, version) index; any other reaches `product_events` by its
 * (subject, sequence) one.
 */
export function eventsOfSubject(
  subject: RawBuilder<unknown>,
  where: (sequence: RawBuilder<unknown>) => RawBuilder<unknown>,
  types?: readonly string[],
): RawBuilder<unknown> {
  const ofTypes = (alias: 'o' | 'p') =>
    types ? sql`and ${sql.ref(`${alias}.type`)} = any(${[...types]}::text[])` : sql``;
  return sql`(
    select ${orderEventColumns()} from order_events o
    where o.order_id = subject_order_id(${subject}) and ${where(sql`o.version`)} ${ofTypes('o')}
    union all
    select ${productEventColumns()} from product_events p
    where subject_order_id(${subject}) is null and p.subject = ${subject}
      and ${where(sql`p.sequence`)} ${ofTypes('p')})`;
}

/**
 * Up to `limit` events after `cursor`, in feed order, order events and product events together.
 * An event is shown once every transaction that began writing before its own has ended
 * (committed or not): a later read finds nothing new before the last event of this one.
 */
export async function eventsAfter(
  db: Db,
  cursor: FeedCursor,
  limit: number,
  /** false: the events without their `data` (the relay needs none) */
  withData = true,
  /** the horizon to read below (feedHorizon); now when left out */
  horizon?: bigint,
): Promise<FeedEvent[]> {
  const r = await sql<EventRow>`
    (select ${orderEventColumns(withData)} from order_events o
     where ${afterCursor('o', cursor)} and ${belowHorizon('o', horizon)}
     order by o.txid, o.position limit ${limit})
    union all
    (select ${productEventColumns(withData)} from product_events p
     where ${afterCursor('p', cursor)} and ${belowHorizon('p', horizon)}
     order by p.txid, p.position limit ${limit})
    order by txid, position
    limit ${limit}`.execute(db);
  return r.rows.map(eventOf);
}

/** The feed's horizon now: every event written below it is shown (see belowHorizon). */
export async function feedHorizon(db: Db): Promise<bigint> {
  const r = await sql<{ horizon: string }>`
    select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`.execute(db);
  return BigInt(r.rows[0]!.horizon);
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
 * Deletes up to `limit` events older than `hours`, of both tables, oldest in feed order first,
 * and moves the pruning mark past them; never one still owed to a webhook endpoint: not yet
 * handed on by the relay, or behind what a lane of its subject, of an endpoint taking its type,
 * acknowledged (pending, waiting for a disabled endpoint, or dead-lettered: a replay sends it).
 * Such events stay past the retention until delivered. @returns how many were deleted
 */
export async function pruneEvents(db: Db, hours: number, limit: number): Promise<number> {
  const owed = (
    subject: RawBuilder<unknown>,
    sequence: RawBuilder<unknown>,
    type: RawBuilder<unknown>,
  ) => sql`exists (
    select 1 from webhook_lanes l
    join webhook_endpoints w on w.id = l.endpoint_id
    where l.subject = ${subject} and l.acked_version < ${sequence}
      and l.acked_version < l.wanted_version and ${type} = any(w.types))`;
  const r = await sql<{ n: string }>`
    with relayed as (select txid, position from webhook_relay where id = 1),
    old as (
      (select o.order_id, o.version, null::text as id, o.txid, o.position, true as of_order
       from order_events o
       where o.occurred_at < now() - ${hours} * interval '1 hour'
         and (o.txid, o.position) <= (select txid, position from relayed)
         and not ${owed(sql`o.order_id::text`, sql`o.version`, sql`o.type`)}
       order by o.txid, o.position limit ${limit})
      union all
      (select null::uuid, null::integer, p.id, p.txid, p.position, false from product_events p
       where p.occurred_at < now() - ${hours} * interval '1 hour'
         and (p.txid, p.position) <= (select txid, position from relayed)
         and not ${owed(sql`p.subject`, sql`p.sequence`, sql`p.type`)}
       order by p.txid, p.position limit ${limit})
      order by txid, position limit ${limit}),
    gone_orders as (
      delete from order_events where (order_id, version) in (
        select order_id, version from old where of_order)
      returning txid, position),
    gone_products as (
      delete from product_events where id in (select id from old where not of_order)
      returning txid, position),
    gone as (select * from gone_orders union all select * from gone_products),
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

  eventsAfter(cursor: FeedCursor, limit: number): Promise<FeedEvent[]> {
    return eventsAfter(this.db, cursor, limit);
  }

  prunedThrough(): Promise<FeedCursor | undefined> {
    return prunedThrough(this.db);
  }

  pruneEvents(hours: number, limit: number): Promise<number> {
    return pruneEvents(this.db, hours, limit);
  }
}
