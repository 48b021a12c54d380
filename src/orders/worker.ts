/**
 * The order worker: persists batches (INSERT ... ON CONFLICT DO NOTHING, many rows per
 * statement), schedules the expiry of those awaiting payment, then deletes them from their
 * outboxes; and expires an order when its job comes up. At-least-once delivery + the unique
 * idempotency key = exactly one row per sale. The upkeep worker runs the sweeper on its
 * schedule, apart, so a stuck sweep never holds a slot persistence needs.
 */
import { Worker, type Job, type Queue } from 'bullmq';
import type { SoldOrder } from '../inventory/index.js';
import type { Logger } from '../log.js';
import { withinDeadline } from '../outages.js';
// BullMQ builds its own blocking connections from an ioredis one: the one storage import here
import type { RedisClient } from '../redis/connection.js';
import { JOB, ORDER_QUEUE, UPKEEP_QUEUE, type ExpireJob, type PersistJob } from './jobs.js';
import { scheduleExpiries } from './queue.js';

/** Capped exponential backoff: 250 ms, 500 ms, ... at most 10 s between attempts. */
export function cappedBackoff(attemptsMade: number): number {
  return Math.min(250 * 2 ** Math.max(0, attemptsMade - 1), 10_000);
}

/** Longest an order's expiry may take (a few statements and one script) before it is retried. */
const EXPIRE_MS = 15_000;

export interface OrderWorkerOptions {
  /** BullMQ's connection (its own: a worker blocks on it) */
  connection: RedisClient;
  prefix: string;
  /** the order rows (repository.ts) */
  rows: { insertOrders(orders: readonly SoldOrder[]): Promise<number> };
  /** the outboxes (inventory's OrderStore) */
  outbox: { clearOutbox(orders: readonly SoldOrder[]): Promise<void> };
  concurrency: number;
  batchSize: number;
  lockMs: number;
  /** the order queue, to schedule the expiry of orders awaiting payment as they are persisted */
  queue?: Queue;
  /** runs for an order's `expire` job (at its deadline) */
  expire?: (orderId: string) => Promise<unknown>;
  logger?: Logger;
  onPersisted?: (rows: number, orders: number) => void;
  /** runs each job as the process's background work (its commands are no request's) */
  background?: <T>(fn: () => Promise<T>) => Promise<T>;
}

export function createOrderWorker(opts: OrderWorkerOptions): Worker {
  const persist = async (job: Job<PersistJob>) => {
    const orders = job.data.orders;
    let inserted = 0;
    for (let i = 0; i < orders.length; i += opts.batchSize) {
      const chunk = orders.slice(i, i + opts.batchSize);
      inserted += await opts.rows.insertOrders(chunk);
      // every awaiting order of the chunk, new or not: a redelivered batch must not lose its
      // expiries (the same order is one job)
      const awaiting = chunk.filter((o) => o.payWithinSeconds > 0);
      if (awaiting.length > 0 && opts.queue) await scheduleExpiries(opts.queue, awaiting);
      // Only after the rows are committed: a crash in between leaves them in the outbox, and
      // the redelivery inserts nothing new.
      await opts.outbox.clearOutbox(chunk);
    }
    opts.onPersisted?.(inserted, orders.length);
    return { inserted, orders: orders.length };
  };
  const work = async (job: Job) => {
    if (job.name === JOB.persist) return persist(job as Job<PersistJob>);
    if (job.name === JOB.expire) {
      // bounded: a store that does not answer fails the job (retried), not the slot for good
      const { orderId } = job.data as ExpireJob;
      return opts.expire && withinDeadline(opts.expire(orderId), EXPIRE_MS, `expire ${orderId}`);
    }
    // left on this queue by a version that swept here; the upkeep queue sweeps now
    if (job.name === JOB.sweep) return 'moved to the upkeep queue';
    throw new Error(`unknown job ${job.name}`);
  };
  const background = opts.background ?? (<T>(fn: () => Promise<T>) => fn());
  const worker = new Worker(ORDER_QUEUE, (job: Job) => background(() => work(job)), {
    connection: opts.connection,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
    lockDuration: opts.lockMs,
    // look for stalled jobs (a crashed worker's) as often as a lock can lapse
    stalledInterval: opts.lockMs,
    // a crashed worker's batch is redelivered; many redeliveries mean something else is wrong
    maxStalledCount: 10,
    settings: { backoffStrategy: cappedBackoff },
  });
  worker.on('failed', (job, err) =>
    opts.logger?.warn(
      { job: job?.id, attempts: job?.attemptsMade, err: err.message },
      'order job failed; it will be retried',
    ),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'order worker error'));
  return worker;
}

export interface UpkeepWorkerOptions {
  connection: RedisClient;
  prefix: string;
  lockMs: number;
  /** runs for the scheduled `sweep` job */
  sweep: () => Promise<unknown>;
  logger?: Logger;
}

/** One sweep at a time, on its own queue: however long a sweep takes, orders keep persisting. */
export function createUpkeepWorker(opts: UpkeepWorkerOptions): Worker {
  const worker = new Worker(
    UPKEEP_QUEUE,
    async (job: Job) => {
      if (job.name === JOB.sweep) return opts.sweep();
      throw new Error(`unknown job ${job.name}`);
    },
    {
      connection: opts.connection,
      prefix: opts.prefix,
      concurrency: 1,
      lockDuration: opts.lockMs,
      stalledInterval: opts.lockMs,
    },
  );
  worker.on('failed', (job, err) =>
    opts.logger?.warn(
      { job: job?.id, err: err.message },
      'sweep failed; the next one runs on time',
    ),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'upkeep worker error'));
  return worker;
}
