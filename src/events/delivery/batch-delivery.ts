/**
 * The lanes the relay hands on, many to a BullMQ job (one per endpoint and page of lanes): their
 * due events read in one query, then each lane delivered as lane-attempt.ts says, in a slot of
 * the process shared among the endpoints (endpoint-slots.ts; the lanes of a quiet endpoint are
 * held back, those released together in one statement). A lane whose attempt failed is recorded as due
 * again later, when the relay gives it a job of its own (lane-delivery.ts); a lane already waiting
 * for that (`nextAttemptAt` set) is left to it, so a batch never overtakes a retry.
 */
import type { EventType } from '../feed/index.js';
import type { Admission } from './endpoint-slots.js';
import { deliverDue, type DeliveryCore } from './lane-attempt.js';
import type { Endpoint } from '../endpoints/index.js';
import type { DueLane, LaneRef } from '../lanes/index.js';

export interface BatchDeps extends DeliveryCore {
  endpoint(id: string): Promise<Endpoint | undefined>;
  dueLanes(
    endpointId: string,
    subjects: readonly string[],
    types: readonly EventType[],
  ): Promise<DueLane[]>;
  /** queues the lane's own job (a replay moved it while it was sent: it is read again) */
  ownJob(ref: LaneRef): Promise<void>;
  /** a slot of the process for a lane of this endpoint, or held back (endpoint-slots.ts) */
  enter(endpointId: string): Promise<Admission>;
  /** records lanes held back: each due again after its delay, not an attempt */
  hold(held: ReadonlyArray<LaneRef & { delayMs: number }>): Promise<void>;
}

export interface BatchResult {
  delivered: number;
  retrying: number;
  dead: number;
  /** not attempted: their endpoint is quiet and busy */
  held: number;
  /** dead, waiting for its next attempt, or nothing due */
  skipped: number;
}

export async function deliverBatch(
  deps: BatchDeps,
  endpointId: string,
  subjects: readonly string[],
): Promise<BatchResult> {
  const result: BatchResult = { delivered: 0, retrying: 0, dead: 0, held: 0, skipped: 0 };
  const endpoint = await deps.endpoint(endpointId);
  if (!endpoint || endpoint.status !== 'active') return { ...result, skipped: subjects.length };
  const lanes = await deps.dueLanes(endpointId, subjects, endpoint.types);
  const hold = coalesced(deps.hold);
  let gone = false;
  await Promise.all(
    lanes.map(async ({ lane, due }) => {
      if (lane.deadVersion !== null || lane.nextAttemptAt !== null || due.length === 0) {
        result.skipped++;
        return;
      }
      const admission = await deps.enter(endpointId);
      if (admission.held) {
        result.held++;
        // now, not once the batch's other lanes are done: one of them may hang for the timeout
        await hold({ endpointId, subject: lane.subject, delayMs: admission.holdMs });
        return;
      }
      try {
        if (gone) {
          result.skipped++;
          return;
        }
        const r = await deliverDue(deps, endpoint, lane, due, admission.slot);
        if (r.code === 'gone') gone = true;
        else if (r.code === 'dead') result.dead++;
        else if (r.code === 'retry') result.retrying++;
        else if (r.code === 'delivered') {
          result.delivered++;
          if (r.moved) await deps.ownJob(lane);
        }
      } finally {
        admission.slot.release();
      }
    }),
  );
  return result;
}

/** `write` for what is pushed within one turn of the event loop, in one call. */
function coalesced<T>(write: (items: readonly T[]) => Promise<void>): (item: T) => Promise<void> {
  let items: T[] = [];
  let written: Promise<void> | undefined;
  return (item) => {
    items.push(item);
    written ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      const batch = items;
      items = [];
      written = undefined;
      return write(batch);
    });
    return written;
  };
}
