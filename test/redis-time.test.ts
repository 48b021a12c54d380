import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { serverNowMs, streamIdMs, timeReplyMs } from '../src/redis/time.js';

describe('Redis server time', () => {
  const redis = new Redis(inject('redisUrl'));
  const key = `t${randomBytes(4).toString('hex')}:stream`;
  afterAll(async () => {
    await redis.del(key);
    redis.disconnect();
  });

  it('reads ms from a TIME reply, truncating microseconds', () => {
    expect(timeReplyMs(['1700000000', '999999'])).toBe(1_700_000_000_999);
    expect(timeReplyMs(['1700000000', '000999'])).toBe(1_700_000_000_000);
  });

  it("dates a stream entry by the server's clock, between two TIME readings", async () => {
    const before = await serverNowMs(redis);
    const id = (await redis.xadd(key, '*', 'f', 'v'))!;
    const after = await serverNowMs(redis);
    expect(streamIdMs(id)).toBeGreaterThanOrEqual(before);
    expect(streamIdMs(id)).toBeLessThanOrEqual(after);
    expect(streamIdMs('1700000000123-42')).toBe(1_700_000_000_123);
  });
});
