/**
 * What deliveries and the admin read of the lanes, joined to their events: a batch's due events
 * (one query for its lanes), and an endpoint's dead letters.
 */
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import { eventOf, type EventRow, type EventType, type FeedCursor } from '../feed/index.js';
import type { DueLane, Lane } from './lane.js';

/** A dead letter: the first event of a lane the last retry failed on. */
export interface DeadLetter {
  orderId: string;
  eventId: string;
  type: EventType;
  version: number;
  cursor: FeedCursor;
  /** events of the lane from it on (itself included) */
  events: number;
  attempts: number;
  error: string | null;
  deadAt: Date;
}

/**
 * The lanes of these orders on the endpoint, each with its events past the acknowledged
 * version, of the endpoint's types, oldest first: a batch's reading, in one query.
 */
export async function dueLanes(
  db: Db,
  endpointId: string,
  orderIds: readonly string[],
  types: readonly EventType[],
): Promise<DueLane[]> {
  // a lane without a due event comes with its event's columns null
  const r = await sql<
    Omit<EventRow, 'id'> & {
      id: string | null;
      acked_version: number;
      wanted_version: number;
      attempts: number;
      next_attempt_at: Date | null;
      scheduled_at: Date | null;
      dead_version: number | null;
    }
  >`
      select l.order_id, l.acked_version, l.wanted_version, l.attempts, l.next_attempt_at,
             l.scheduled_at, l.dead_version,
             e.id, e.txid, e.position, e.version, e.type, e.occurred_at, e.data
      from webhook_lanes l
      left join order_events e on e.order_id = l.order_id and e.version > l.acked_version
        and e.type = any(${[...types]}::text[])
      where l.endpoint_id = ${endpointId} and l.order_id = any(${[...orderIds]}::uuid[])
      order by l.order_id, e.version`.execute(db);
  const lanes = new Map<string, DueLane>();
  for (const row of r.rows) {
    let entry = lanes.get(row.order_id);
    if (!entry) {
      entry = {
        lane: {
          endpointId,
          orderId: row.order_id,
          wantedVersion: row.wanted_version,
          ackedVersion: row.acked_version,
          attempts: row.attempts,
          nextAttemptAt: row.next_attempt_at,
          scheduledAt: row.scheduled_at,
          deadVersion: row.dead_version,
        },
        due: [],
      };
      lanes.set(row.order_id, entry);
    }
    if (row.id !== null) {
      entry.due.push(eventOf({ ...row, id: row.id }));
    }
  }
  return [...lanes.values()];
}

/** The endpoint's dead letters, newest first. */
export async function deadLetters(
  db: Db,
  endpointId: string,
  limit: number,
): Promise<DeadLetter[]> {
  const r = await sql<{
    order_id: string;
    id: string;
    type: string;
    version: number;
    txid: string;
    position: string;
    events: string;
    attempts: number;
    last_error: string | null;
    dead_at: Date;
  }>`
      select l.order_id, e.id, e.type, e.version, e.txid, e.position, l.attempts, l.last_error,
             l.dead_at,
             (select count(*) from order_events x
              where x.order_id = l.order_id and x.version >= l.dead_version) as events
      from webhook_lanes l
      join order_events e on e.order_id = l.order_id and e.version = l.dead_version
      where l.endpoint_id = ${endpointId} and l.dead_version is not null
      order by l.dead_at desc limit ${limit}`.execute(db);
  return r.rows.map((row) => ({
    orderId: row.order_id,
    eventId: row.id,
    type: row.type as EventType,
    version: row.version,
    cursor: { txid: BigInt(row.txid), position: BigInt(row.position) },
    events: Number(row.events),
    attempts: row.attempts,
    error: row.last_error,
    deadAt: row.dead_at,
  }));
}
