/**
 * The delivery lanes' SQL (one lane per endpoint and order): the relay's hand-on (in one
 * transaction with its cursor, one relay at a time), a delivery's acknowledgement (only from the
 * version it read: a replay that moved the lane meanwhile wins), a failed attempt, a dead
 * letter, the lanes a lost job left waiting, replays, and what is pending.
 */
import { sql, type Transaction } from 'kysely';
import type { Database, Db } from '../../db/index.js';
import type { EventType, FeedCursor, OrderEvent } from '../feed/cloud-event.js';
import { deadLetters, dueLanes, type DeadLetter } from './lane-reads-repository.js';
import type { Lane, LaneRef } from './lane.js';
import { eventsAfter } from '../feed/events-repository.js';

export type { DeadLetter, Lane, LaneRef };

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
  /** live lanes given something new: their deliveries are due */
  lanes: LaneRef[];
}

export class LanesRepository {
  constructor(private readonly db: Db) {}

  /**
   * Hands the next `limit` events of the feed on to the endpoints that take their type, and moves
   * the relay's cursor past them, in one transaction that one relay at a time may hold. With no
   * endpoint at all, nobody takes any: the cursor moves past every event shown now in one
   * statement that reads none (`events` then counts 1 when it moved, 0 when there was nothing).
   */
  handOn(
    endpoints: ReadonlyArray<{ id: string; types: readonly EventType[] }>,
    limit: number,
  ): Promise<HandOn> {
    return this.db.transaction().execute(async (tx) => {
      const at = await sql<{ txid: string; position: string }>`
        select txid, position from webhook_relay where id = 1 for update skip locked`.execute(tx);
      if (!at.rows[0]) return { ran: false, events: 0, lanes: [] };
      const cursor = { txid: BigInt(at.rows[0].txid), position: BigInt(at.rows[0].position) };
      if (endpoints.length === 0)
        return { ran: true, events: await skipAll(tx, cursor), lanes: [] };
      const events = await eventsAfter(tx, cursor, limit, false);
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

  async get(ref: LaneRef): Promise<Lane | undefined> {
    const row = await this.db
      .selectFrom('webhook_lanes')
      .select(['wanted_version', 'acked_version', 'attempts', 'dead_version'])
      .where('endpoint_id', '=', ref.endpointId)
      .where('order_id', '=', ref.orderId)
      .executeTakeFirst();
    return (
      row && {
        ...ref,
        wantedVersion: row.wanted_version,
        ackedVersion: row.acked_version,
        attempts: row.attempts,
        deadVersion: row.dead_version,
      }
    );
  }

  /**
   * The receiver acknowledged `version`; `from` is the acked version the delivery read. @returns
   * false when the lane moved meanwhile (a replay): the delivery reads it again
   */
  /**
   * Receivers acknowledged these: each lane moves to `version` only from the `from` its delivery
   * read (a replay that moved it meanwhile wins), all in one statement. @returns the lanes moved,
   * as `<endpoint> <order>`
   */
  async ackMany(acks: readonly Ack[]): Promise<Set<string>> {
    if (acks.length === 0) return new Set();
    const r = await sql<{ endpoint_id: string; order_id: string }>`
      update webhook_lanes l set acked_version = a.version, attempts = 0, last_error = null,
        next_attempt_at = null,
        pending_since = case when a.version >= l.wanted_version then null
          else coalesce(a.next, l.pending_since) end
      from unnest(${acks.map((k) => k.endpointId)}::text[], ${acks.map((k) => k.orderId)}::uuid[],
        ${acks.map((k) => k.from)}::int[], ${acks.map((k) => k.version)}::int[],
        ${acks.map((k) => k.nextPendingSince?.toISOString() ?? null)}::timestamptz[])
        as a(endpoint_id, order_id, from_version, version, next)
      where l.endpoint_id = a.endpoint_id and l.order_id = a.order_id
        and l.acked_version = a.from_version and l.dead_version is null
      returning l.endpoint_id, l.order_id`.execute(this.db);
    return new Set(r.rows.map((row) => `${row.endpoint_id} ${row.order_id}`));
  }

  /** A failed attempt: counted, with its reason and when the next one is due. */
  async failed(ref: LaneRef, attempts: number, error: string, nextAt: Date): Promise<void> {
    await this.db
      .updateTable('webhook_lanes')
      .set({ attempts, last_error: error.slice(0, 500), next_attempt_at: nextAt })
      .where('endpoint_id', '=', ref.endpointId)
      .where('order_id', '=', ref.orderId)
      .execute();
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
      })
      .where('endpoint_id', '=', ref.endpointId)
      .where('order_id', '=', ref.orderId)
      .execute();
  }

  /** Nothing of the lane's types is left past `from`: it is caught up. */
  async catchUp(ref: LaneRef, from: number): Promise<void> {
    await this.db
      .updateTable('webhook_lanes')
      .set({ acked_version: sql`wanted_version`, pending_since: null, attempts: 0 })
      .where('endpoint_id', '=', ref.endpointId)
      .where('order_id', '=', ref.orderId)
      .where('acked_version', '=', from)
      .execute();
  }

  /**
   * Up to `limit` live lanes of active endpoints with something due and no delivery running or
   * waiting for them (a job lost with a crash, a replay, an endpoint enabled again), marked
   * enqueued now. @param idleMs - how long a lane must have been left alone
   */
  async stranded(idleMs: number, limit: number): Promise<LaneRef[]> {
    const r = await sql<{ endpoint_id: string; order_id: string }>`
      update webhook_lanes l set enqueued_at = now()
      from (
        select l2.endpoint_id, l2.order_id from webhook_lanes l2
        join webhook_endpoints e on e.id = l2.endpoint_id and e.status = 'active'
        where l2.acked_version < l2.wanted_version and l2.dead_version is null
          and l2.enqueued_at < now() - ${idleMs} * interval '1 millisecond'
          and (l2.next_attempt_at is null
               or l2.next_attempt_at < now() - ${idleMs} * interval '1 millisecond')
        limit ${limit}
        for update of l2 skip locked) due
      where l.endpoint_id = due.endpoint_id and l.order_id = due.order_id
      returning l.endpoint_id, l.order_id`.execute(this.db);
    return r.rows.map((row) => ({ endpointId: row.endpoint_id, orderId: row.order_id }));
  }

  /**
   * Every event of `types` after `from` is due again on the endpoint's lanes (dead ones live
   * again), from each order's earliest such version. @returns how many lanes
   */
  async replay(endpointId: string, types: readonly EventType[], from: FeedCursor): Promise<number> {
    const r = await sql<{ n: string }>`
      with due as (
        select order_id, min(version) as first, max(version) as last, min(occurred_at) as since
        from order_events
        where (txid, position) > (${String(from.txid)}::bigint, ${String(from.position)}::bigint)
          and txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
          and type = any(${[...types]}::text[])
        group by order_id),
      moved as (
        insert into webhook_lanes (endpoint_id, order_id, wanted_version, acked_version,
                                   pending_since, enqueued_at)
        select ${endpointId}, order_id, last, first - 1, since, now() - interval '1 hour'
        from due
        on conflict (endpoint_id, order_id) do update set
          wanted_version = greatest(webhook_lanes.wanted_version, excluded.wanted_version),
          acked_version = least(webhook_lanes.acked_version, excluded.acked_version),
          pending_since = least(webhook_lanes.pending_since, excluded.pending_since),
          attempts = 0, last_error = null, next_attempt_at = null,
          dead_version = null, dead_at = null, enqueued_at = excluded.enqueued_at
        returning 1)
      select count(*) as n from moved`.execute(this.db);
    return Number(r.rows[0]?.n ?? 0);
  }

  dueLanes(endpointId: string, orderIds: readonly string[], types: readonly EventType[]) {
    return dueLanes(this.db, endpointId, orderIds, types);
  }

  deadLetters(endpointId: string, limit: number): Promise<DeadLetter[]> {
    return deadLetters(this.db, endpointId, limit);
  }
}

/** Per endpoint and order, the newest version of the endpoint's types and when the first was. */
/**
 * Moves the relay's cursor to the last event shown now (the feed's rule: below the oldest
 * transaction still running), reading the feed's index from its end: one row, however many
 * events a sale wrote. @returns 1 when it moved, 0 when nothing new was shown
 */
async function skipAll(tx: Transaction<Database>, cursor: FeedCursor): Promise<number> {
  const r = await sql`
    update webhook_relay r set txid = last.txid, position = last.position
    from (select txid, position from order_events
          where (txid, position) > (${String(cursor.txid)}::bigint, ${String(cursor.position)}::bigint)
            and txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
          order by txid desc, position desc limit 1) last
    where r.id = 1`.execute(tx);
  return Number(r.numAffectedRows ?? 0);
}

function lanesFor(
  events: readonly OrderEvent[],
  endpoints: ReadonlyArray<{ id: string; types: readonly EventType[] }>,
) {
  const lanes = new Map<
    string,
    { endpointId: string; orderId: string; version: number; since: Date }
  >();
  for (const endpoint of endpoints) {
    for (const event of events) {
      if (!endpoint.types.includes(event.type)) continue;
      const key = `${endpoint.id} ${event.orderId}`;
      const lane = lanes.get(key);
      if (!lane) {
        lanes.set(key, {
          endpointId: endpoint.id,
          orderId: event.orderId,
          version: event.version,
          since: event.occurredAt,
        });
      } else lane.version = Math.max(lane.version, event.version);
    }
  }
  return [...lanes.values()];
}

async function upsertLanes(
  tx: Transaction<Database>,
  lanes: ReadonlyArray<{ endpointId: string; orderId: string; version: number; since: Date }>,
): Promise<LaneRef[]> {
  const r = await sql<{ endpoint_id: string; order_id: string }>`
    insert into webhook_lanes (endpoint_id, order_id, wanted_version, pending_since)
    select * from unnest(${lanes.map((l) => l.endpointId)}::text[],
      ${lanes.map((l) => l.orderId)}::uuid[], ${lanes.map((l) => l.version)}::int[],
      ${lanes.map((l) => l.since.toISOString())}::timestamptz[])
    on conflict (endpoint_id, order_id) do update set
      wanted_version = greatest(webhook_lanes.wanted_version, excluded.wanted_version),
      pending_since = case when webhook_lanes.acked_version >= webhook_lanes.wanted_version
        then excluded.pending_since
        else coalesce(webhook_lanes.pending_since, excluded.pending_since) end,
      enqueued_at = now()
    returning endpoint_id, order_id, dead_version`.execute(tx);
  return r.rows
    .filter((row) => (row as { dead_version?: number | null }).dead_version == null)
    .map((row) => ({ endpointId: row.endpoint_id, orderId: row.order_id }));
}
