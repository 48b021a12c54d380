/**
 * The order queue (BullMQ). Jobs carry batches of outbox orders: one job per order caps a
 * 2-core machine at a few thousand orders/s, a batch per job does not. Job ids are derived from
 * the first order of a batch, so the same batch enqueued twice is one job; a duplicate that still
 * gets through is harmless (the insert is idempotent).
 */
import { Queue, type JobsOptions } from 'bullmq';
// BullMQ takes an ioredis connection to build its own: the one storage import here
import type { RedisClient } from '../redis/connection.js';
import type { Logger } from '../log.js';
import {
  batchJobId,
  expiryJobId,
  JOB,
  ORDER_QUEUE,
  UPKEEP_QUEUE,
  type ExpireJob,
  type PersistJob,
} from './jobs.js';
import type { SoldOrder } from '../inventory/index.js';
import { payBy } from './repository.js';

/**
 * Persist jobs that used up their attempts, kept for an operator to read (Bull Board): the newest
 * 1,000, none older than 7 days (BullMQ's `age` is in seconds), so a long PostgreSQL outage cannot
 * grow the queue without bound. Dropping a failed job loses no order: its orders stay in their
 * outbox until a worker commits them, and the sweeper re-enqueues them.
 */
export const FAILED_JOBS_KEPT = { count: 1_000, age: 7 * 24 * 3_600 } as const;

/** Retries with a capped exponential backoff (see the worker); a bounded set of failures kept. */
export const PERSIST_JOB_OPTIONS: JobsOptions = {
  attempts: 30,
  backoff: { type: 'capped' },
  removeOnComplete: { count: 1_000 },
  removeOnFail: FAILED_JOBS_KEPT,
};

export function createOrderQueue(connection: RedisClient, prefix: string): Queue {
  return new Queue(ORDER_QUEUE, { connection, prefix, defaultJobOptions: PERSIST_JOB_OPTIONS });
}

export function createUpkeepQueue(connection: RedisClient, prefix: string): Queue {
  return new Queue(UPKEEP_QUEUE, { connection, prefix });
}

/** Pauses between the attempts to enqueue one batch. */
const ENQUEUE_RETRY_DELAYS_MS = [100, 400, 1_000];

/**
 * An expiry job runs this much after the deadline: BullMQ may start a delayed job a few ms early,
 * and one that finds the order not yet due (on PostgreSQL's clock) waits a retry's backoff.
 */
const EXPIRY_MARGIN_MS = 20;

/** Schedules the expiry of orders awaiting payment, each at its deadline (a delayed job). */
export async function scheduleExpiries(queue: Queue, orders: readonly SoldOrder[]): Promise<void> {
  const now = Date.now();
  await queue.addBulk(
    orders.map((o) => ({
      name: JOB.expire,
      data: { orderId: o.orderId } satisfies ExpireJob,
      opts: {
        jobId: expiryJobId(o.orderId),
        delay: Math.max(0, (payBy(o)?.getTime() ?? now) - now + EXPIRY_MARGIN_MS),
        // a job early on PostgreSQL's clock fails and is retried; the payment sweep backs it up
        attempts: 8,
        backoff: { type: 'capped' },
        removeOnComplete: true,
        removeOnFail: 1_000,
      },
    })),
  );
}

/**
 * Collects sold orders in the API process and hands them to the queue in batches (at most
 * `batchSize` orders, or after `maxDelayMs`). Losing a batch here (crash, Redis error) loses
 * nothing: the orders are in the outbox and the sweeper re-enqueues them.
 */
export class OrderSubmitter {
  private buffer: SoldOrder[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly queue: Queue,
    private readonly opts: { batchSize: number; maxDelayMs: number; logger?: Logger },
  ) {}

  add(order: SoldOrder): void {
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
    const p = this.enqueue(orders)
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

  /**
   * A batch is tried a few times before it is left to the sweeper: the sweeper can only find
   * orders still in an outbox, and a failover can take an outbox entry with it (the same job id
   * twice is one job).
   */
  private async enqueue(orders: SoldOrder[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.queue.add(JOB.persist, { orders } satisfies PersistJob, {
          jobId: batchJobId(orders),
        });
        return;
      } catch (err) {
        if (attempt >= ENQUEUE_RETRY_DELAYS_MS.length) throw err;
        await new Promise((r) => setTimeout(r, ENQUEUE_RETRY_DELAYS_MS[attempt]));
      }
    }
  }

  /** Hands over what is buffered and waits for it (shutdown). */
  async close(): Promise<void> {
    this.flush();
    await Promise.all(this.inFlight);
  }
}
