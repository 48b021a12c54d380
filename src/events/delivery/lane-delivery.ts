/**
 * One lane's own job (its id names the endpoint and subject, so it is never queued twice): a lane
 * due again after a failed attempt, a lane left stranded, a replay. Its due events are sent as
 * lane-attempt.ts says, and read again once delivered (events committed meanwhile, or a replay
 * that moved it), until nothing is due or an attempt fails; how it ended is the job's value.
 */
import type { EventType } from '../feed/index.js';
import type { Admission } from './endpoint-slots.js';
import { deliverDue, type DeliveryCore, type LaneOutcome } from './lane-attempt.js';
import type { Endpoint } from '../endpoints/index.js';
import type { DueLane, LaneRef } from '../lanes/index.js';

export interface LaneDeps extends DeliveryCore {
  endpoint(id: string): Promise<Endpoint | undefined>;
  /** the lane with its events past the acknowledged version, of these types (as a batch reads) */
  dueLane(ref: LaneRef, types: readonly EventType[]): Promise<DueLane | undefined>;
  catchUp(ref: LaneRef, from: number): Promise<void>;
  /** a slot of the process for a lane of this endpoint, or held back (endpoint-slots.ts) */
  enter(endpointId: string): Promise<Admission>;
  /** records lanes held back: each due again after its delay, not an attempt */
  hold(held: ReadonlyArray<LaneRef & { delayMs: number }>): Promise<void>;
}

export type LaneResult =
  | LaneOutcome
  /** nothing sent: the endpoint is not active, the lane is dead-lettered, or owed nothing */
  | { code: 'idle'; why: 'disabled' | 'dead' | 'nothing' };

/** Delivers what is due on the lane, in a slot of the process. @returns how it ended */
export async function deliverLane(deps: LaneDeps, ref: LaneRef): Promise<LaneResult> {
  const endpoint = await deps.endpoint(ref.endpointId);
  if (!endpoint || endpoint.status !== 'active') return { code: 'idle', why: 'disabled' };
  const first = await readDue(deps, endpoint, ref);
  if (first.code === 'idle') return first;
  const admission = await deps.enter(ref.endpointId);
  if (admission.held) {
    await deps.hold([{ ...ref, delayMs: admission.holdMs }]);
    return { code: 'held', delayMs: admission.holdMs };
  }
  try {
    for (let read = first.read; ;) {
      const r = await deliverDue(deps, endpoint, read.lane, read.due, admission.slot);
      if (r.code !== 'delivered') return r;
      // read it again: events committed meanwhile, or a replay that moved it
      const next = await readDue(deps, endpoint, ref);
      if (next.code === 'idle') return { code: 'delivered', moved: false };
      read = next.read;
    }
  } finally {
    admission.slot.release();
  }
}

/** The lane and what it is owed; idle when it is dead or owed nothing (caught up, then). */
async function readDue(
  deps: LaneDeps,
  endpoint: Endpoint,
  ref: LaneRef,
): Promise<{ code: 'due'; read: DueLane } | { code: 'idle'; why: 'dead' | 'nothing' }> {
  const read = await deps.dueLane(ref, endpoint.types);
  if (!read) return { code: 'idle', why: 'nothing' };
  if (read.lane.deadVersion !== null) return { code: 'idle', why: 'dead' };
  if (read.due.length > 0) return { code: 'due', read };
  if (read.lane.ackedVersion < read.lane.wantedVersion) {
    await deps.catchUp(ref, read.lane.ackedVersion);
  }
  return { code: 'idle', why: 'nothing' };
}
