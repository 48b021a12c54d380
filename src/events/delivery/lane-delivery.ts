/**
 * One lane's own job (its id names the endpoint and order, so it is never queued twice): a lane
 * due again after a failed attempt, a lane left stranded, a replay. Its due events are sent as
 * lane-attempt.ts says, and read again once delivered (events committed meanwhile, or a replay
 * that moved it), until nothing is due or an attempt fails; how it ended is the job's value.
 */
import type { EventType } from '../feed/index.js';
import { deliverDue, type DeliveryCore, type LaneOutcome } from './lane-attempt.js';
import type { Endpoint } from '../endpoints/index.js';
import type { DueLane, LaneRef } from '../lanes/index.js';

export interface LaneDeps extends DeliveryCore {
  endpoint(id: string): Promise<Endpoint | undefined>;
  /** the lane with its events past the acknowledged version, of these types (as a batch reads) */
  dueLane(ref: LaneRef, types: readonly EventType[]): Promise<DueLane | undefined>;
  catchUp(ref: LaneRef, from: number): Promise<void>;
}

export type LaneResult =
  | LaneOutcome
  /** nothing sent: the endpoint is not active, the lane is dead-lettered, or nothing is due */
  | { code: 'idle'; why: 'disabled' | 'dead' | 'nothing' };

/** Delivers what is due on the lane. @returns how it ended */
export async function deliverLane(deps: LaneDeps, ref: LaneRef): Promise<LaneResult> {
  const endpoint = await deps.endpoint(ref.endpointId);
  if (!endpoint || endpoint.status !== 'active') return { code: 'idle', why: 'disabled' };
  for (let sent = false; ; sent = true) {
    const read = await deps.dueLane(ref, endpoint.types);
    if (!read) return { code: 'idle', why: 'nothing' };
    const { lane, due } = read;
    if (lane.deadVersion !== null) return { code: 'idle', why: 'dead' };
    if (due.length === 0) {
      if (lane.ackedVersion < lane.wantedVersion) await deps.catchUp(ref, lane.ackedVersion);
      return sent ? { code: 'delivered', moved: false } : { code: 'idle', why: 'nothing' };
    }
    const r = await deliverDue(deps, endpoint, lane, due);
    if (r.code !== 'delivered') return r;
  }
}
