/**
 * Failed order jobs are kept in a bounded set: a long PostgreSQL outage must
 * not grow the queue without bound. Real Redis and real BullMQ, with the order queue's own
 * default job options.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createOrderQueue, FAILED_JOBS_KEPT } from '../../src/orders/queue.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();

describe('failed order jobs', () => {
  it('past the bound, only the newest failed jobs are kept', async () => {
    const connection = new Redis(ns.redisUrl, { maxRetriesPerRequest: null });
    const prefix = `${ns.id}:q`;
    const queue = createOrderQueue(connection, prefix);
    const failing = new Worker(
      queue.name,
      async () => {
        throw new Error('PostgreSQL is away');
      },
      {
        connection: new Redis(ns.redisUrl, { maxRetriesPerRequest: null }),
        prefix,
        concurrency: 50,
      },
    );
    try {
      const extra = 10;
      const jobs = FAILED_JOBS_KEPT.count + extra;
      // one attempt each (the defaults' 30 would take minutes); the rest of the defaults apply
      await queue.addBulk(
        Array.from({ length: jobs }, (_, i) => ({
          name: 'persist',
          data: { orders: [] },
          opts: { jobId: `failing-${i}`, attempts: 1 },
        })),
      );
      await waitFor(
        'every job tried',
        async () => {
          const c = await queue.getJobCounts('waiting', 'active', 'prioritized');
          return (c.waiting ?? 0) + (c.active ?? 0) + (c.prioritized ?? 0) === 0;
        },
        60_000,
      );
      await failing.close();
      expect(await queue.getJobCountByTypes('failed')).toBe(FAILED_JOBS_KEPT.count);
      // the oldest failures went, the newest stayed
      expect(await queue.getJob('failing-0')).toBeUndefined();
      expect(await (await queue.getJob(`failing-${jobs - 1}`))?.getState()).toBe('failed');
    } finally {
      await failing.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await connection.quit();
      await (failing.opts.connection as Redis).quit().catch(() => undefined);
    }
  });
});
