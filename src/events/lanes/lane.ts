/** A lane: the delivery of one order's events to one endpoint, in version order. */
import type { OrderEvent } from '../feed/index.js';

export interface LaneRef {
  endpointId: string;
  orderId: string;
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
  due: OrderEvent[];
}
