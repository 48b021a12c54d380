/**
 * A second holder of a segment lock, in this (the test's) process: it takes the lock in turn with
 * the API processes' purchases, holding it a few milliseconds each time. A purchase that finds
 * the lock held, waited for or handed off goes the full lock protocol (its process's line, the
 * lock's own line, a watchdog lease), so purchases hold the lock visibly, as they do in a
 * contended sale; a segment nobody else wants is deducted in one script that takes and gives the
 * lock back (lua/deductFree-11.lua), which never leaves a hold to see or to lose.
 */
import { LockClient } from '../../src/lock/index.js';
import { createRedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';

export interface Contender {
  /** this process holds the lock now (a freeze then catches its hold, not a purchase's) */
  holding(): boolean;
  /** holds taken so far */
  holds(): number;
  stop(): Promise<void>;
}

export function contend(o: {
  redisUrl: string;
  keyPrefix: string;
  productId: string;
  segment: number;
}): Contender {
  const keys = new Keys(o.keyPrefix);
  const redis = createRedisClient({ url: o.redisUrl }, { name: 'obs-contender' });
  const sub = createRedisClient(
    { url: o.redisUrl },
    { name: 'obs-contender-sub', role: 'subscriber' },
  );
  for (const c of [redis, sub]) c.on('error', () => undefined); // a frozen Redis is part of the show
  const pubsub = new PubSub(sub);
  const locks = new LockClient({ redis, pubsub, keys });
  const name = keys.segmentLockName(o.productId, o.segment);
  let stopped = false;
  let holding = false;
  let holds = 0;
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const loop = (async () => {
    while (!stopped) {
      try {
        const held = await locks.acquire(name, { waitMs: 5_000, leaseMs: 2_000 });
        if (held) {
          holding = true;
          holds++;
          await pause(5);
          await held.release();
          holding = false;
        }
      } catch {
        holding = false; // Redis frozen: the hold (if any) runs out; try again once it answers
      }
      await pause(30);
    }
  })();
  return {
    holding: () => holding,
    holds: () => holds,
    async stop() {
      stopped = true;
      await loop;
      await locks.close();
      pubsub.close();
      redis.disconnect();
      sub.disconnect();
    },
  };
}
