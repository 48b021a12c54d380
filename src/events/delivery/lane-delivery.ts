/**
 * One lane's own job (its id names the endpoint and order, so it is never queued twice): a
 * retry after a failed attempt, a lane left stranded, a replay. Its due events are sent as
 * delivery.ts says; a failure throws, and BullMQ runs it again after the delay the failure
 * chose, or never again once it is dead-lettered.
 */
import type { EventType } from '../feed/index.js';
import { DeadLettered, deliverDue, DeliveryFailed, type DeliveryCore } from './delivery.js';
import type { Endpoint } from '../endpoints/index.js';
import type { DueLane, LaneRef } from '../lanes/index.js';

export interface LaneDeps extends DeliveryCore {
  endpoint(id: string): Promise<Endpoint | undefined>;
  /** the lane with its events past the acknowledged version, of these types (as a batch reads) */
  dueLane(ref: LaneRef, types: readonly EventType[]): Promise<DueLane | undefined>;
  catchUp(ref: LaneRef, from: number): Promise<void>;
}

export type LaneResult = 'delivered' | 'disabled' | 'dead' | 'gone' | 'nothing';

/**
 * Delivers what is due on the lane. @returns how it ended
 * @throws DeliveryFailed (retry after its delay) or DeadLettered (no retry)
 */
export async function deliverLane(deps: LaneDeps, ref: LaneRef): Promise<LaneResult> {
  const endpoint = await deps.endpoint(ref.endpointId);
  if (!endpoint || endpoint.status !== 'active') return 'disabled';
  for (let sent = false; ; sent = true) {
    const read = await deps.dueLane(ref, endpoint.types);
    if (!read) return 'nothing';
    const { lane, due } = read;
    if (lane.deadVersion !== null) return 'dead';
    if (due.length === 0) {
      if (lane.ackedVersion < lane.wantedVersion) await deps.catchUp(ref, lane.ackedVersion);
      return sent ? 'delivered' : 'nothing';
    }
    const r = await deliverDue(deps, endpoint, lane, due);
    if (r.code === 'gone') return 'gone';
    if (r.code === 'dead') throw new DeadLettered(r.why);
    if (r.code === 'retry') throw new DeliveryFailed(r.why, r.delayMs);
    // delivered: read the lane again (events committed meanwhile, or a replay that moved it)
  }
}
