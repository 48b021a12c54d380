/**
 * Order persistence wiring for a process: the queue, the API side's submitter, the worker with
 * its sweeper schedule. Each start function registers its close with the lifecycle, so shutdown
 * runs in reverse: stop taking requests, let the worker finish its batches, flush the submitter,
 * close the queue.
 */
import type { Queue, Worker } from 'bullmq';
import { Counter } from 'prom-client';
import type { Purchase } from '../inventory/index.js';
import { closeRedis, createRedis } from '../redis/connection.js';
import type { Runtime } from '../runtime.js';
import { outboxOrderOf } from './outbox.js';
import { createOrderQueue, ORDER_QUEUE, OrderSubmitter } from './queue.js';
import { sweep } from './sweeper.js';
import { createOrderWorker } from './worker.js';

export { reconcile, type ReconcileReport } from './reconcile.js';
export { findOrder, persistedBySegment } from './repository.js';

/** The order queue on its own BullMQ connection (maxRetriesPerRequest: null). */
export function startOrderQueue(rt: Runtime): Queue {
  const connection = createRedis(rt.config.redis.url, {
    name: 'seckill-bullmq',
    role: 'bullmq',
    logger: rt.logger,
  });
  const queue = createOrderQueue(connection, rt.config.redis.queuePrefix);
  // Connection errors are already logged (throttled) by the connection; without a listener
  // BullMQ would print each one to the console.
  queue.on('error', (err) => rt.logger.debug({ err: err.message }, 'order queue error'));
  rt.lifecycle.add('order queue', async () => {
    await queue.close();
    await closeRedis(connection);
  });
  return queue;
}

/** API side: turns each purchase into a queued order (batched). */
export function startOrderSubmitter(rt: Runtime, queue: Queue): (p: Purchase) => void {
  const c = rt.config.orders;
  const submitter = new OrderSubmitter(queue, {
    batchSize: c.enqueueBatchSize,
    maxDelayMs: c.enqueueMaxDelayMs,
    logger: rt.logger,
  });
  rt.lifecycle.add('order submitter', () => submitter.close());
  return (p) => submitter.add(outboxOrderOf(p));
}

/** Worker side: persists batches and runs the sweeper on its schedule. */
export async function startOrderWorker(rt: Runtime, queue: Queue): Promise<Worker> {
  const c = rt.config.orders;
  const persisted = new Counter({
    name: 'seckill_orders_persisted_total',
    help: 'Order rows inserted (redeliveries that inserted nothing are not counted)',
    registers: [rt.registry],
  });
  const connection = createRedis(rt.config.redis.url, {
    name: 'seckill-worker',
    role: 'bullmq',
    logger: rt.logger,
  });
  const worker = createOrderWorker({
    connection,
    prefix: rt.config.redis.queuePrefix,
    db: rt.db,
    redis: rt.redis,
    keys: rt.inventory.keys,
    concurrency: c.workerConcurrency,
    batchSize: c.workerBatchSize,
    lockMs: c.workerLockMs,
    logger: rt.logger,
    onPersisted: (rows) => persisted.inc(rows),
    sweep: () =>
      sweep({
        redis: rt.redis,
        keys: rt.inventory.keys,
        db: rt.db,
        queue,
        minAgeMs: c.sweepMinAgeMs,
        claimTtlMs: rt.config.sale.claimTtlMs,
        batchSize: c.workerBatchSize,
        logger: rt.logger,
      }),
  });
  await queue.upsertJobScheduler(
    'sweeper',
    { every: c.sweepIntervalMs },
    { name: 'sweep', opts: { removeOnComplete: true, removeOnFail: 100 } },
  );
  rt.lifecycle.add('order worker', async () => {
    // waits for the batches in hand; a batch cut short by a crash is redelivered instead
    await worker.close();
    await closeRedis(connection);
  });
  return worker;
}

export { ORDER_QUEUE };
