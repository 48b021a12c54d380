/**
 * A BullMQ client whose first connection failed stays failed: the process must end (and the
 * supervisor start a fresh one) rather than run on, answering "Connection is closed." forever.
 * Real Redis and real BullMQ; the failed init is made by handing BullMQ a connection that ended.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { watchBullInit } from '../../src/composition/bull-init.js';
import { useNamespace } from '../support/namespace.js';
import { waitFor } from '../support/cli.js';

const ns = useNamespace();

function deaths() {
  const seen: Array<{ name: string; err: string }> = [];
  const onDead = (name: string, err: unknown) =>
    seen.push({ name, err: err instanceof Error ? err.message : String(err) });
  return { seen, onDead };
}

describe('watchBullInit', () => {
  it('names a queue whose connection never initialised, and BullMQ indeed never recovers it', async () => {
    const connection = new Redis(ns.redisUrl, { maxRetriesPerRequest: null });
    await connection.ping();
    connection.disconnect(); // ended: as a cluster client whose INFO hit a paused master
    await waitFor('the connection ended', async () => connection.status === 'end', 5_000, 10);
    const queue = new Queue('dead', { connection, prefix: `${ns.id}:q` });
    queue.on('error', () => undefined);
    const { seen, onDead } = deaths();
    watchBullInit(queue, 'order queue', onDead, () => false);
    await expect(queue.waitUntilReady()).rejects.toThrow('Connection is closed.');
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([{ name: 'order queue', err: 'Connection is closed.' }]);
    // the reason it is fatal: the queue keeps that answer for every call
    await expect(queue.count()).rejects.toThrow('Connection is closed.');
  });

  it('says nothing for a queue that connects, nor for one that fails while shutting down', async () => {
    const live = new Queue('live', {
      connection: new Redis(ns.redisUrl, { maxRetriesPerRequest: null }),
      prefix: `${ns.id}:q`,
    });
    const { seen, onDead } = deaths();
    watchBullInit(live, 'order queue', onDead, () => false);
    expect(await live.count()).toBe(0);

    const ended = new Redis(ns.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
    ended.disconnect();
    const closing = new Queue('closing', { connection: ended, prefix: `${ns.id}:q` });
    closing.on('error', () => undefined);
    watchBullInit(closing, 'upkeep queue', onDead, () => true);
    await closing.waitUntilReady().catch(() => undefined);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([]);
    await live.close();
    await (live.opts.connection as Redis).quit();
  });
});
