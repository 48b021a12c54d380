/**
 * What deliveries and the admin read of the lanes, joined to their events (of either table: the
 * feed's eventsOfSubject): a batch's due events (one query for its lanes), and an endpoint's dead
 * letters.
 */
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import {
  eventOf,
  eventsOfSubject,
  type EventRow,
  type EventType,
  type FeedCursor,
} from '../feed/index.js';
import type { DueLane, Lane } from './lane.js';

/** A dead letter: the first event of a lane the last retry failed on. */
export interface DeadLetter {
  /** the order id, or the product event's subject */
  subject: string;
  eventId: string;
  type: EventType;
  /** the order's version, or the subject's sequence number */
  version: number;
  /** false: a product event's subject */
  ofOrder: boolean;
  cursor: FeedCursor;
  /** events of the lane from it on (itself included) */
  events: number;
  attempts: number;
  error: string | null;
  deadAt: Date;
}

/**
 * The lanes of these subjects on the endpoint, each with its events past the acknowledged
 * version, of the endpoint's types, oldest first: a batch's reading, in one query.
 */
export async function dueLanes(
  db: Db,
  endpointId: string,
  subjects: readonly string[],
  types: readonly EventType[],
): Promise<DueLane[]> {
  // a lane without a due event comes with its event's columns null
  const r = await sql<
    Omit<EventRow, 'id' | 'subject'> & {
      id: string | null;
      lane_subject: string;
      acked_version: number;
      wanted_version: number;
      attempts: number;
      next_attempt_at: Date | null;
      scheduled_at: Date | null;
      dead_version: number | null;
    }
  >`
      select l.subject as lane_subject, l.acked_version, l.wanted_version, l.attempts,
             l.next_attempt_at, l.scheduled_at, l.dead_version,
             e.id, e.txid, e.position, e.source, e.sequence, e.type, e.product_id,
             e.occurred_at, e.data
      from webhook_lanes l
      left join lateral ${eventsOfSubject(
        sql`l.subject`,
        (sequence) => sql`${sequence} > l.acked_version`,
        types,
      )} e on true
      where l.endpoint_id = ${endpointId} and l.subject = any(${[...subjects]}::text[])
      order by l.subject, e.sequence`.execute(db);
  const lanes = new Map<string, DueLane>();
  for (const row of r.rows) {
    let entry = lanes.get(row.lane_subject);
    if (!entry) {
      const lane: Lane = {
        endpointId,
        subject: row.lane_subject,
        wantedVersion: row.wanted_version,
        ackedVersion: row.acked_version,
        attempts: row.attempts,
        nextAttemptAt: row.next_attempt_at,
        scheduledAt: row.scheduled_at,
        deadVersion: row.dead_version,
      };
      entry = { lane, due: [] };
      lanes.set(row.lane_subject, entry);
    }
    if (row.id !== null) {
      entry.due.push(eventOf({ ...row, id: row.id, subject: row.lane_subject }));
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
    subject: string;
    id: string;
    type: string;
    sequence: number;
    product_id: string | null;
    txid: string;
    position: string;
    events: string;
    attempts: number;
    last_error: string | null;
    dead_at: Date;
  }>`
      select l.subject, e.id, e.type, e.sequence, e.product_id, e.txid, e.position, l.attempts,
             l.last_error, l.dead_at,
             (select count(*) from ${eventsOfSubject(
               sql`l.subject`,
               (sequence) => sql`${sequence} >= l.dead_version`,
             )} x) as events
      from webhook_lanes l
      join lateral ${eventsOfSubject(
        sql`l.subject`,
        (sequence) => sql`${sequence} = l.dead_version`,
      )} e on true
      where l.endpoint_id = ${endpointId} and l.dead_version is not null
      order by l.dead_at desc limit ${limit}`.execute(db);
  return r.rows.map((row) => ({
    subject: row.subject,
    eventId: row.id,
    type: row.type as EventType,
    version: row.sequence,
    ofOrder: row.product_id === null,
    cursor: { txid: BigInt(row.txid), position: BigInt(row.position) },
    events: Number(row.events),
    attempts: row.attempts,
    error: row.last_error,
    deadAt: row.dead_at,
  }));
}
