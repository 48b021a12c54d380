import { LockClient, type LockClientOptions } from '../../src/lock/index.js';
import {
  Cluster,
  createRedisClient,
  type RedisClient,
  type RedisTarget,
} from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';

export interface TestLockClient {
  locks: LockClient;
  redis: RedisClient;
  close(): Promise<void>;
}

/** A LockClient on its own command and subscriber connections, like a separate process has. */
export function lockClient(
  target: string | RedisTarget,
  prefix: string,
  opts: Partial<Omit<LockClientOptions, 'redis' | 'pubsub' | 'keys'>> = {},
): TestLockClient {
  const where = typeof target === 'string' ? { url: target } : target;
  const redis = createRedisClient(where, { name: 'test-lock' });
  const subscriber = createRedisClient(where, { name: 'test-lock-sub', role: 'subscriber' });
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

/** Calls of a command since the server started, from INFO commandstats (every master's). */
export async function commandCalls(redis: RedisClient, command: string): Promise<number> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let n = 0;
  for (const node of nodes) {
    const info = await node.info('commandstats');
    const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
    n += m ? Number(m[1]) : 0;
  }
  return n;
}
