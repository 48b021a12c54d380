/**
 * The order queues' names, job names and job ids, in one place: a job written under one name and
 * read under another would sit in the queue unprocessed.
 */
import type { SoldOrder } from '../inventory/index.js';

export const ORDER_QUEUE = 'orders';

/**
 * Background upkeep (the sweep) on a queue and worker of its own: a sweep held up by a store
 * that does not answer (a master just lost, its replica not yet confirming) must never take a
 * slot of the workers that persist orders.
 */
export const UPKEEP_QUEUE = 'upkeep';

/** Job names: a batch to persist, an order's expiry (order queue); the sweep (upkeep queue). */
export const JOB = { persist: 'persist', expire: 'expire', sweep: 'sweep' } as const;

/** The job scheduler that adds a sweep job every SWEEP_INTERVAL_MS. */
export const SWEEP_SCHEDULER = 'sweeper';

export interface PersistJob {
  orders: SoldOrder[];
}

export interface ExpireJob {
  orderId: string;
}

// BullMQ refuses custom ids with ":" (its key separator): "-" it is.
export const batchJobId = (orders: readonly SoldOrder[]) => `o-${orders[0]!.orderId}`;

/** A batch the sweeper re-enqueues: named by its first outbox entry, apart from the submitter's. */
export const sweptBatchJobId = (orders: readonly SoldOrder[]) =>
  `s-${orders[0]!.outboxId}-${orders[0]!.orderId}`;

/** An order's expiry job: one per order (the same order scheduled twice is one job). */
export const expiryJobId = (orderId: string) => `x-${orderId}`;
