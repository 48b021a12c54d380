/**
 * The BullMQ side of event delivery: the `webhooks` queue, a `batch` job per endpoint and page
 * of lanes the relay (relay-loop.ts) hands on, and a `lane` job of a lane's own (its id names
 * the endpoint and order, so a lane is never queued twice) for its retries, waiting the delay the
 * delivery chose.
 */
import {
  Queue,
  UnrecoverableError,
  Worker,
  type ConnectionOptions,
  type Job,
  type JobsOptions,
} from 'bullmq';
import type { Logger } from '../../log.js';
import { DeadLettered, DeliveryFailed } from './delivery.js';
import type { LaneRef } from '../lanes/index.js';

export const WEBHOOKS_QUEUE = 'webhooks';
export const JOB = { lane: 'lane', batch: 'batch' } as const;

/** Lanes one batch job carries at most. */
export const BATCH_LANES = 100;

export interface BatchJob {
  endpointId: string;
  orderIds: string[];
}

// BullMQ refuses custom ids with ":" (its key separator)
export const laneJobId = (ref: LaneRef) => `l-${ref.endpointId}-${ref.orderId}`;

/**
 * A lane's job: retried until the delivery dead-letters it (its own count, per event), each
 * retry after the delay it chose; gone once done, so the lane can be queued again.
 */
export const LANE_JOB_OPTIONS: JobsOptions = {
  attempts: 100_000,
  backoff: { type: 'webhook' },
  removeOnComplete: true,
  removeOnFail: true,
};

export function createEventQueues(connection: ConnectionOptions, prefix: string) {
  return {
    webhooks: new Queue(WEBHOOKS_QUEUE, {
      connection,
      prefix,
      defaultJobOptions: LANE_JOB_OPTIONS,
    }),
  };
}

/** Queues a job of each lane's own, after `delayMs` (a lane with a job already is left alone). */
export async function queueLanes(
  webhooks: Queue,
  lanes: readonly LaneRef[],
  delayMs = 0,
): Promise<void> {
  for (let i = 0; i < lanes.length; i += 500) {
    await webhooks.addBulk(
      lanes.slice(i, i + 500).map((ref) => ({
        name: JOB.lane,
        data: ref,
        opts: {
          ...LANE_JOB_OPTIONS,
          jobId: laneJobId(ref),
          ...(delayMs > 0 && { delay: delayMs }),
        },
      })),
    );
  }
}

/**
 * Queues the lanes handed on as batch jobs, BATCH_LANES each per endpoint. A batch lost with a
 * crash leaves its lanes stranded: the relay queues them again (their own jobs).
 */
export async function queueBatches(webhooks: Queue, lanes: readonly LaneRef[]): Promise<void> {
  const byEndpoint = new Map<string, string[]>();
  for (const l of lanes)
    byEndpoint.set(l.endpointId, [...(byEndpoint.get(l.endpointId) ?? []), l.orderId]);
  const jobs = [...byEndpoint].flatMap(([endpointId, orderIds]) =>
    Array.from({ length: Math.ceil(orderIds.length / BATCH_LANES) }, (_, i) => ({
      name: JOB.batch,
      data: { endpointId, orderIds: orderIds.slice(i * BATCH_LANES, (i + 1) * BATCH_LANES) },
      opts: {
        attempts: 3,
        backoff: { type: 'fixed', delay: 1_000 },
        removeOnComplete: true,
        removeOnFail: 100,
      },
    })),
  );
  if (jobs.length) await webhooks.addBulk(jobs);
}

export function createDeliveryWorker(opts: {
  connection: ConnectionOptions;
  prefix: string;
  concurrency: number;
  /** longest a delivery holds its job before another worker may take it */
  lockMs: number;
  lane: (ref: LaneRef) => Promise<unknown>;
  batch: (job: BatchJob) => Promise<unknown>;
  logger?: Logger | undefined;
}): Worker {
  const worker = new Worker(
    WEBHOOKS_QUEUE,
    async (job: Job) => {
      if (job.name === JOB.batch) return opts.batch(job.data as BatchJob);
      try {
        return await opts.lane(job.data as LaneRef);
      } catch (err) {
        // the lane is dead-lettered: no retry
        if (err instanceof DeadLettered) throw new UnrecoverableError(err.message);
        throw err;
      }
    },
    {
      connection: opts.connection,
      prefix: opts.prefix,
      concurrency: opts.concurrency,
      lockDuration: opts.lockMs,
      stalledInterval: opts.lockMs,
      maxStalledCount: 10,
      settings: {
        backoffStrategy: (_attempts: number, _type?: string, err?: Error) =>
          err instanceof DeliveryFailed ? err.delayMs : 1_000,
      },
    },
  );
  worker.on('failed', (job, err) =>
    opts.logger?.debug({ job: job?.id, err: err.message }, 'webhook delivery attempt failed'),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'webhook worker error'));
  return worker;
}
