/**
 * BullMQ's own Prometheus export (Queue.exportPrometheusMetrics), as the installed version gives
 * it: the facts docs/decisions.md ("Operating") rests on for keeping seckill_queue_jobs, a
 * prom-client gauge over the same Queue.getJobCounts. When an upgrade changes one of them, this
 * fails and the decision is to be made again. Real Redis, real BullMQ.
 */
import { spawnSync } from 'node:child_process';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { prometheusBinary } from '../../tools/observability/prometheus.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();

describe('BullMQ exportPrometheusMetrics, as installed', () => {
  const connection = () => new Redis(ns.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('export', { connection: connection(), prefix: `{${ns.id}q}` });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    await (queue.opts.connection as Redis).quit();
  });

  it('counts jobs by state as our gauge does, but its failed total stays 0 and its name breaks the naming rules', async () => {
    const worker = new Worker(
      'export',
      async () => {
        throw new Error('refused');
      },
      { connection: connection(), prefix: `{${ns.id}q}` },
    );
    try {
      await queue.add('one', {}, { attempts: 1, removeOnFail: false });
      await expect.poll(async () => (await queue.getJobCounts('failed')).failed).toBe(1);
    } finally {
      await worker.close();
      await (worker.opts.connection as Redis).quit();
    }
    const text = await queue.exportPrometheusMetrics();
    // the job counts: what seckill_queue_jobs{state} exports from the same getJobCounts
    expect(text).toContain('bullmq_job_count{queue="export", state="failed"} 1');
    expect(text).toContain('bullmq_job_count{queue="export", state="waiting"} 0');
    // a job failed for good, and its failed total says 0: it counts only what workers started
    // with the `metrics` option record (an extra write per finished job), which ours do not
    expect(text).toContain('bullmq_job_failed_total{queue="export"} 0');
    // and a gauge named *_count, which Prometheus reserves for histograms and summaries
    const lint = spawnSync(prometheusBinary('promtool'), ['check', 'metrics'], {
      input: `${text}\n`,
      encoding: 'utf8',
    });
    expect(`${lint.stdout}${lint.stderr}`).toContain(
      'bullmq_job_count non-histogram and non-summary metrics should not have "_count" suffix',
    );
  });
});
