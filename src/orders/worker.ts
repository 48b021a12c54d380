/**
 * The order worker: persists batches (INSERT ... ON CONFLICT DO NOTHING, many rows per
 * statement), schedules the expiry of those awaiting payment, then deletes them from their
 * outboxes; expires an order when its job comes up; and runs the sweeper on its schedule. At-least-once delivery + the unique idempotency key = exactly one row per sale.
 */
import { Worker, type Job, type Queue } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import type { Db } from '../db/index.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { clearOutbox } from './outbox.js';
import { ORDER_QUEUE, scheduleExpiries, type ExpireJob, type PersistJob } from './queue.js';
import { insertOrders } from './repository.js';

/** Capped exponential backoff: 250 ms, 500 ms, ... at most 10 s between attempts. */
export function cappedBackoff(attemptsMade: number): number {
  return Math.min(250 * 2 ** Math.max(0, attemptsMade - 1), 10_000);
}

export interface OrderWorkerOptions {
  connection: RedisClient;
  prefix: string;
  db: Db;
  /** command connection for outbox deletes */
  redis: RedisClient;
  keys: Keys;
  concurrency: number;
  batchSize: number;
  lockMs: number;
  /** runs for the scheduled `sweep` job */
  sweep?: () => Promise<unknown>;
  /** the order queue, to schedule the expiry of orders awaiting payment as they are persisted */
  queue?: Queue;
  /** runs for an order's `expire` job (at its deadline) */
  expire?: (orderId: string) => Promise<unknown>;
  logger?: Logger;
  onPersisted?: (rows: number, orders: number) => void;
}

export function createOrderWorker(opts: OrderWorkerOptions): Worker {
  const persist = async (job: Job<PersistJob>) => {
    const orders = job.data.orders;
    let inserted = 0;
    for (let i = 0; i < orders.length; i += opts.batchSize) {
      const chunk = orders.slice(i, i + opts.batchSize);
      inserted += await insertOrders(opts.db, chunk);
      // every awaiting order of the chunk, new or not: a redelivered batch must not lose its
      // expiries (the same order is one job)
      const awaiting = chunk.filter((o) => o.payWithinSeconds > 0);
      if (awaiting.length > 0 && opts.queue) await scheduleExpiries(opts.queue, awaiting);
      // Only after the rows are committed: a crash in between leaves them in the outbox, and
      // the redelivery inserts nothing new.
      await clearOutbox(opts.redis, opts.keys, chunk);
    }
    opts.onPersisted?.(inserted, orders.length);
    return { inserted, orders: orders.length };
  };
  const worker = new Worker(
    ORDER_QUEUE,
    async (job: Job) => {
      if (job.name === 'persist') return persist(job as Job<PersistJob>);
      if (job.name === 'sweep') return opts.sweep?.();
      if (job.name === 'expire') return opts.expire?.((job.data as ExpireJob).orderId);
      throw new Error(`unknown job ${job.name}`);
    },
    {
      connection: opts.connection,
      prefix: opts.prefix,
      concurrency: opts.concurrency,
      lockDuration: opts.lockMs,
      // look for stalled jobs (a crashed worker's) as often as a lock can lapse
      stalledInterval: opts.lockMs,
      // a crashed worker's batch is redelivered; many redeliveries mean something else is wrong
      maxStalledCount: 10,
      settings: { backoffStrategy: cappedBackoff },
    },
  );
  worker.on('failed', (job, err) =>
    opts.logger?.warn(
      { job: job?.id, attempts: job?.attemptsMade, err: err.message },
      'order job failed; it will be retried',
    ),
  );
  worker.on('error', (err) => opts.logger?.warn({ err: err.message }, 'order worker error'));
  return worker;
}
