/**
 * The lanes the relay hands on, many to a BullMQ job (one per endpoint and page of lanes): their
 * due events read in one query, then each lane delivered as delivery.ts says, WEBHOOK_CONCURRENCY
 * at once across the process. A lane whose attempt failed leaves the batch for its own job
 * (lane-delivery.ts), queued with the delay the failure chose; a lane that already has one (it
 * is failing: `attempts` > 0) is left to it, so a batch never overtakes a retry.
 */
import type { EventType } from '../feed/index.js';
import { deliverDue, type DeliveryCore } from './delivery.js';
import type { Endpoint } from '../endpoints/index.js';
import type { DueLane, LaneRef } from '../lanes/index.js';

export interface BatchDeps extends DeliveryCore {
  endpoint(id: string): Promise<Endpoint | undefined>;
  dueLanes(
    endpointId: string,
    orderIds: readonly string[],
    types: readonly EventType[],
  ): Promise<DueLane[]>;
  /** queues the lane's own job, to run after `delayMs` */
  retryLater(ref: LaneRef, delayMs: number): Promise<void>;
  /** runs `work` when one of the process's WEBHOOK_CONCURRENCY delivery slots is free */
  slot<T>(work: () => Promise<T>): Promise<T>;
}

export interface BatchResult {
  delivered: number;
  retrying: number;
  dead: number;
  /** dead, owned by a retry, or nothing due */
  skipped: number;
}

export async function deliverBatch(
  deps: BatchDeps,
  endpointId: string,
  orderIds: readonly string[],
): Promise<BatchResult> {
  const result: BatchResult = { delivered: 0, retrying: 0, dead: 0, skipped: 0 };
  const endpoint = await deps.endpoint(endpointId);
  if (!endpoint || endpoint.status !== 'active') return { ...result, skipped: orderIds.length };
  const lanes = await deps.dueLanes(endpointId, orderIds, endpoint.types);
  let gone = false;
  await Promise.all(
    lanes.map(({ lane, due }) =>
      deps.slot(async () => {
        if (gone || lane.deadVersion !== null || lane.attempts > 0 || due.length === 0) {
          result.skipped++;
          return;
        }
        const r = await deliverDue(deps, endpoint, lane, due);
        if (r.code === 'gone') gone = true;
        else if (r.code === 'dead') result.dead++;
        else if (r.code === 'retry') {
          result.retrying++;
          await deps.retryLater(lane, r.delayMs);
        } else {
          result.delivered++;
          // a replay moved the lane while it was sent: its own job reads it again
          if (r.moved) await deps.retryLater(lane, 0);
        }
      }),
    ),
  );
  return result;
}

/** A pool of `size` slots: `slot(work)` runs work once one is free. */
export function slots(size: number): <T>(work: () => Promise<T>) => Promise<T> {
  let busy = 0;
  const waiting: Array<() => void> = [];
  return async (work) => {
    if (busy >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    busy++;
    try {
      return await work();
    } finally {
      busy--;
      waiting.shift()?.();
    }
  };
}
