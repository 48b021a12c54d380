/**
 * The BullMQ side of event delivery: the `webhooks` queue, a `batch` job per endpoint and page
 * of lanes the relay hands on, and a `lane` job of a lane's own (its id names the endpoint and
 * subject, so a lane is never queued twice) when it is due again or was left stranded. Both run
 * now: when a lane is due again is kept in PostgreSQL (lanes/), not in a delayed job, and every
 * delivery's outcome is the job's value. A job fails only on an error (PostgreSQL away): it is
 * tried twice more, a second apart, and a lane it leaves is found stranded.
 */
import { Queue, Worker, type ConnectionOptions, type Job, type JobsOptions } from 'bullmq';
import type { Logger } from '../../log.js';
import type { LaneRef } from '../lanes/index.js';

export const WEBHOOKS_QUEUE = 'webhooks';
export const JOB = { lane: 'lane', batch: 'batch' } as const;

/** Lanes one batch job carries at most. */
export const BATCH_LANES = 100;

export interface BatchJob {
  endpointId: string;
  subjects: string[];
}

/**
 * A job's lanes: jobs queued before lanes had subjects named them by `orderId(s)`, and a worker
 * may find such a job waiting after an upgrade.
 */
export const batchSubjects = (data: BatchJob | { orderIds: string[] }): string[] =>
  'subjects' in data ? data.subjects : data.orderIds;
export const laneOf = (data: LaneRef | { endpointId: string; orderId: string }): LaneRef =>
  'subject' in data ? data : { endpointId: data.endpointId, subject: data.orderId };

// BullMQ refuses custom ids with ":" (its key separator); an order id is kept as it is
export const laneJobId = (ref: LaneRef) => `l-${ref.endpointId}-${encodeURIComponent(ref.subject)}`;

/** Every job: tried again only after an error; a lane's job is gone once done (queued again later). */
export const JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'fixed', delay: 1_000 },
  removeOnComplete: true,
  removeOnFail: true,
};

export function createEventQueues(connection: ConnectionOptions, prefix: string) {
  return {
    webhooks: new Queue(WEBHOOKS_QUEUE, {
      connection,
      prefix,
      defaultJobOptions: JOB_OPTIONS,
    }),
  };
}

/** Queues a job of each lane's own (a lane with a job already is left alone). */
export async function queueLanes(webhooks: Queue, lanes: readonly LaneRef[]): Promise<void> {
  for (let i = 0; i < lanes.length; i += 500) {
    await webhooks.addBulk(
      lanes.slice(i, i + 500).map((ref) => ({
        name: JOB.lane,
        data: ref,
        opts: { ...JOB_OPTIONS, jobId: laneJobId(ref) },
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
    byEndpoint.set(l.endpointId, [...(byEndpoint.get(l.endpointId) ?? []), l.subject]);
  const jobs = [...byEndpoint].flatMap(([endpointId, subjects]) =>
    Array.from({ length: Math.ceil(subjects.length / BATCH_LANES) }, (_, i) => ({
      name: JOB.batch,
      data: { endpointId, subjects: subjects.slice(i * BATCH_LANES, (i + 1) * BATCH_LANES) },
      opts: { ...JOB_OPTIONS, removeOnFail: 100 },
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
    (job: Job) =>
      job.name === JOB.batch
        ? opts.batch({ endpointId: job.data.endpointId, subjects: batchSubjects(job.data) })
        : opts.lane(laneOf(job.data)),
    {
      connection: opts.connection,
      prefix: opts.prefix,
      concurrency: opts.concurrency,
      lockDuration: opts.lockMs,
      stalledInterval: opts.lockMs,
      maxStalledCount: 10,
    },
  );
  worker.on('failed', (job, err) =>
    opts.logger?.warn({ job: job?.id, err: err.message }, 'webhook delivery job failed'),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'webhook worker error'));
  return worker;
}
