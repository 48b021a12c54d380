import type { Redis } from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src/lock/index.js';
import { createRedis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';

export interface TestLockClient {
  locks: LockClient;
  redis: Redis;
  close(): Promise<void>;
}

/** A LockClient on its own command and subscriber connections, like a separate process has. */
export function lockClient(
  url: string,
  prefix: string,
  opts: Partial<Omit<LockClientOptions, 'redis' | 'pubsub' | 'keys'>> = {},
): TestLockClient {
  const redis = createRedis(url, { name: 'test-lock' });
  const subscriber = createRedis(url, { name: 'test-lock-sub', role: 'subscriber' });
  const pubsub = new PubSub(subscriber);
  const locks = new LockClient({ redis, pubsub, keys: new Keys(prefix), ...opts });
  return {
    locks,
    redis,
    async close() {
      await locks.close();
      pubsub.close();
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves when `n` parties have arrived: makes contenders start together. */
export function barrier(n: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((r) => (release = r));
  return () => {
    if (++arrived === n) release();
    return all;
  };
}

/** Calls of a command since the server started, from INFO commandstats. */
export async function commandCalls(redis: Redis, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : 0;
}
