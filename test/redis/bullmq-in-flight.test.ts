/**
 * A BullMQ connection whose socket dies with a command in flight (the command ran, its reply never
 * came): the command must fail, not wait forever. ioredis, with autoResendUnfulfilledCommands off
 * and maxRetriesPerRequest null (what BullMQ requires), forgets such a command at the reconnect:
 * its promise never settles. A worker's `moveToFinished` lost that way held its slot for good,
 * and the worker persisted nothing more (chaos soak, seed 4: 856 orders left in their outboxes).
 */
import { Queue, Worker } from 'bullmq';
import { afterEach, expect, it } from 'vitest';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { useNamespace } from '../support/namespace.js';
import { replyLosingProxy } from '../support/proxy.js';
import { waitFor } from '../support/cli.js';
import { settledWithin as outcome } from '../support/settled.js';

const ns = useNamespace();
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it('a command in flight when a bullmq connection dies fails, and the connection comes back', async () => {
  const proxy = await replyLosingProxy(Number(new URL(ns.redisUrl).port));
  cleanups.push(() => proxy.close());
  const redis = createRedis(proxy.url, { name: 'in-flight-test', role: 'bullmq' });
  cleanups.push(() => closeRedis(redis));
  expect(await redis.ping()).toBe('PONG');
  const key = `${ns.id}:in-flight`;
  proxy.loseReplyTo((cmd) => cmd.includes(key), { thenClose: true });
  // ran on the server (the key is set), its reply lost with the connection
  expect(await outcome(redis.set(key, 'v'), 5_000)).toBe('failed: Connection is closed.');
  expect(proxy.lost).toBe(1);
  expect(await outcome(redis.get(key), 5_000)).toBe('answered v');
});

it('a worker whose job-finishing command is lost with its connection goes on with the next jobs', async () => {
  const proxy = await replyLosingProxy(Number(new URL(ns.redisUrl).port));
  cleanups.push(() => proxy.close());
  const prefix = `{${ns.id}q}`;
  const queueConnection = createRedis(ns.redisUrl, { name: 'in-flight-queue', role: 'bullmq' });
  cleanups.push(() => closeRedis(queueConnection));
  const queue = new Queue('in-flight', { connection: queueConnection, prefix });
  cleanups.push(() => queue.close());
  const workerConnection = createRedis(proxy.url, { name: 'in-flight-worker', role: 'bullmq' });
  cleanups.push(() => closeRedis(workerConnection));
  const processed: string[] = [];
  const worker = new Worker(
    'in-flight',
    async (job) => {
      processed.push(job.id!);
      return job.id;
    },
    {
      connection: workerConnection,
      prefix,
      concurrency: 1,
      lockDuration: 1_000,
      stalledInterval: 1_000,
    },
  );
  worker.on('error', () => {});
  cleanups.push(() => worker.close(true));
  await worker.waitUntilReady();
  // the reply to the command that completes job a (it names the job and its return value) is
  // lost, and the worker's connection with it
  proxy.loseReplyTo((cmd) => cmd.includes('job-a') && cmd.includes('returnvalue'), {
    thenClose: true,
  });
  await queue.add('j', {}, { jobId: 'job-a' });
  await waitFor('the lost reply', async () => proxy.lost === 1, 10_000);
  await queue.add('j', {}, { jobId: 'job-b' });
  await queue.add('j', {}, { jobId: 'job-c' });
  await waitFor(
    () => `jobs b and c completed (processed: ${processed.join(', ')})`,
    async () =>
      (await queue.getJobState('job-b')) === 'completed' &&
      (await queue.getJobState('job-c')) === 'completed',
    // BullMQ retries the lost call after its runRetryDelay (15 s)
    40_000,
  );
  // job a ran once and its completion was written before the reply was lost
  expect(await queue.getJobState('job-a')).toBe('completed');
  expect(processed).toEqual(['job-a', 'job-b', 'job-c']);
});
