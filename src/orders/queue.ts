/**
 * The order queue (BullMQ). Jobs carry batches of outbox orders: one job per order caps a
 * 2-core machine at a few thousand orders/s, a batch per job does not. Job ids are derived from
 * the first order of a batch, so the same batch enqueued twice is one job; a duplicate that still
 * gets through is harmless (the insert is idempotent).
 */
import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../log.js';
import type { OutboxOrder } from './outbox.js';

export const ORDER_QUEUE = 'orders';

export interface PersistJob {
  orders: OutboxOrder[];
}

/** Retries with a capped exponential backoff (see the worker); failed jobs are kept, not dropped. */
export const PERSIST_JOB_OPTIONS: JobsOptions = {
  attempts: 30,
  backoff: { type: 'capped' },
  removeOnComplete: { count: 1_000 },
  removeOnFail: false,
};

export function createOrderQueue(connection: RedisClient, prefix: string): Queue {
  return new Queue(ORDER_QUEUE, { connection, prefix, defaultJobOptions: PERSIST_JOB_OPTIONS });
}

// BullMQ refuses custom ids with ":" (its key separator): "-" it is.
export const batchJobId = (orders: readonly OutboxOrder[]) => `o-${orders[0]!.orderId}`;

/**
 * Collects sold orders in the API process and hands them to the queue in batches (at most
 * `batchSize` orders, or after `maxDelayMs`). Losing a batch here (crash, Redis error) loses
 * nothing: the orders are in the outbox and the sweeper re-enqueues them.
 */
export class OrderSubmitter {
  private buffer: OutboxOrder[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly queue: Queue,
    private readonly opts: { batchSize: number; maxDelayMs: number; logger?: Logger },
  ) {}

  add(order: OutboxOrder): void {
    this.buffer.push(order);
    if (this.buffer.length >= this.opts.batchSize) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.opts.maxDelayMs);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0) return;
    const orders = this.buffer;
    this.buffer = [];
    const p = this.queue
      .add('persist', { orders } satisfies PersistJob, { jobId: batchJobId(orders) })
      .then(
        () => undefined,
        (err: unknown) =>
          this.opts.logger?.warn(
            { err, orders: orders.length },
            'enqueue failed; the sweeper will re-enqueue these orders from the outbox',
          ),
      )
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** Hands over what is buffered and waits for it (shutdown). */
  async close(): Promise<void> {
    this.flush();
    await Promise.all(this.inFlight);
  }
}
