/**
 * The lanes the relay hands on, many to a BullMQ job (one per endpoint and page of lanes): their
 * due events read in one query, then each lane delivered as lane-attempt.ts says,
 * WEBHOOK_CONCURRENCY at once across the process. A lane whose attempt failed is recorded as due
 * again later, when the relay gives it a job of its own (lane-delivery.ts); a lane already waiting
 * for that (`nextAttemptAt` set) is left to it, so a batch never overtakes a retry.
 */
import type { EventType } from '../feed/index.js';
import { deliverDue, type DeliveryCore } from './lane-attempt.js';
import type { Endpoint } from '../endpoints/index.js';
import type { DueLane, LaneRef } from '../lanes/index.js';

export interface BatchDeps extends DeliveryCore {
  endpoint(id: string): Promise<Endpoint | undefined>;
  dueLanes(
    endpointId: string,
    orderIds: readonly string[],
    types: readonly EventType[],
  ): Promise<DueLane[]>;
  /** queues the lane's own job (a replay moved it while it was sent: it is read again) */
  ownJob(ref: LaneRef): Promise<void>;
  /** runs `work` when one of the process's WEBHOOK_CONCURRENCY delivery slots is free */
  slot<T>(work: () => Promise<T>): Promise<T>;
}

export interface BatchResult {
  delivered: number;
  retrying: number;
  dead: number;
  /** dead, waiting for its next attempt, or nothing due */
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
        if (gone || lane.deadVersion !== null || lane.nextAttemptAt !== null || due.length === 0) {
          result.skipped++;
          return;
        }
        const r = await deliverDue(deps, endpoint, lane, due);
        if (r.code === 'gone') gone = true;
        else if (r.code === 'dead') result.dead++;
        else if (r.code === 'retry') result.retrying++;
        else {
          result.delivered++;
          if (r.moved) await deps.ownJob(lane);
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
