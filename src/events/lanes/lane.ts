/**
 * A lane: the delivery of one subject's events (an order's, or a product event's subject) to one
 * endpoint, in version order (an order's version, a product event's sequence number).
 */
import type { FeedEvent } from '../feed/index.js';

export interface LaneRef {
  endpointId: string;
  /** an order id, or a product event's subject */
  subject: string;
}

export interface Lane extends LaneRef {
  wantedVersion: number;
  ackedVersion: number;
  /** failed attempts at the event now due */
  attempts: number;
  /** when it is tried next (its own job then); null while nothing failed */
  nextAttemptAt: Date | null;
  /** when the retry schedule tries it: an attempt before that is not counted if it fails */
  scheduledAt: Date | null;
  /** dead-lettered from this version on; null while live */
  deadVersion: number | null;
}

/** A lane with what it owes: its events past the acknowledged version, of the endpoint's types. */
export interface DueLane {
  lane: Lane;
  /** oldest first */
  due: FeedEvent[];
}
