/**
 * The command connection's write coalescing (src/redis/connection.ts): the commands of one
 * event-loop turn leave in one write, also when separate callbacks of the turn sent them (what the
 * HTTP requests read in one turn do); a command sent through sendNow leaves at the end of its tick.
 * Writes are counted on the real socket to a real redis-server.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedis, sendNow } from '../../src/redis/connection.js';

describe('Redis command writes', () => {
  let redis: Redis;
  let writes = 0;
  const key = `w${randomBytes(4).toString('hex')}:n`;

  beforeAll(async () => {
    redis = createRedis(inject('redisUrl'), { name: 'writes-test' });
    await redis.ping();
    // count what reaches the socket: one call per system write (one chunk, or a corked batch)
    const stream = (redis as unknown as { stream: Socket & Record<string, unknown> }).stream;
    for (const m of ['_write', '_writev'] as const) {
      const real = stream[m] as (...a: unknown[]) => unknown;
      stream[m] = function (this: Socket, ...a: unknown[]) {
        writes++;
        return real.apply(this, a);
      };
    }
  });
  afterAll(async () => {
    await redis.del(key);
    redis.disconnect();
  });

  it('sends the commands of 20 callbacks of one turn in one write, in order', async () => {
    writes = 0;
    // 20 immediates queued together run in one check phase, each its own callback (Node runs the
    // tick queue between them), as the HTTP requests of one poll phase do: uncorking on the next
    // tick would make that 20 writes. (Timers due together can run in two phases: not used here.)
    const replies = await new Promise<number[]>((resolve) => {
      const got: Array<Promise<number>> = [];
      for (let i = 0; i < 20; i++) {
        setImmediate(() => {
          got.push(redis.incr(key));
          if (got.length === 20) resolve(Promise.all(got));
        });
      }
    });
    expect(writes).toBe(1);
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('sends a command made inside sendNow at the end of its tick, with what waited before it', async () => {
    const seenAtTickEnd = (urgent: boolean) =>
      new Promise<{ writes: number; replies: Promise<unknown> }>((resolve) => {
        setTimeout(() => {
          writes = 0;
          const first = redis.incr(key);
          const second = urgent ? sendNow(() => redis.incr(key)) : redis.incr(key);
          // queued after the connection's own next-tick uncork, so it runs after it
          process.nextTick(() => resolve({ writes, replies: Promise.all([first, second]) }));
        }, 0);
      });
    const batched = await seenAtTickEnd(false);
    expect(batched.writes).toBe(0); // still waiting for the turn's check phase
    await batched.replies;
    const urgent = await seenAtTickEnd(true);
    expect(urgent.writes).toBe(1); // both commands, in one write
    await urgent.replies;
  });
});
