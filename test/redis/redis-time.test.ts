import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ServerClock, serverNowMs, streamIdMs, timeReplyMs } from '../../src/redis/time.js';

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

describe("ServerClock: Redis's clock carried on the monotonic clock", () => {
  const redis = new Redis(inject('redisUrl'));
  afterAll(() => redis.disconnect());

  it('decides nothing before its first sample, then only what is beyond its margin', async () => {
    const clock = new ServerClock(redis, 1_000);
    const now = await serverNowMs(redis);
    // no sample yet: unsure of everything (and a sample is asked for)
    expect(clock.surelyAfter(now - 60_000)).toBe(false);
    expect(clock.surelyBefore(now + 60_000)).toBe(false);
    await clock.sync();
    expect(clock.surelyAfter(now - 60_000)).toBe(true);
    expect(clock.surelyBefore(now + 60_000)).toBe(true);
    // within the margin of the server's now: left to Redis
    expect(clock.surelyAfter(now + 5_000)).toBe(false);
    expect(clock.surelyBefore(now - 5_000)).toBe(false);
  });

  it('a wider margin leaves more to Redis', async () => {
    const clock = new ServerClock(redis, 120_000);
    await clock.sync();
    const now = await serverNowMs(redis);
    expect(clock.surelyAfter(now - 60_000)).toBe(false);
    expect(clock.surelyBefore(now + 60_000)).toBe(false);
    expect(clock.surelyAfter(now - 180_000)).toBe(true);
  });

  it('an old sample keeps serving while a new one is taken in the background', async () => {
    const clock = new ServerClock(redis, 1_000, 50);
    await clock.sync();
    const now = await serverNowMs(redis);
    const sampled = () => (clock as unknown as { sample: { monoMs: number } }).sample.monoMs;
    const first = sampled();
    // the scenario: the sample grows past its refresh age
    await new Promise((r) => setTimeout(r, 80));
    // past its refresh age: still answers (a sale that ended a minute ago is not in doubt) ...
    expect(clock.surelyAfter(now - 60_000)).toBe(true);
    expect(sampled()).toBe(first);
    // ... and a new sample was asked for in the background
    await clock.sync();
    expect(sampled()).toBeGreaterThan(first);
  });

  it("an old sample's doubt grows with its age (1 ms a second)", async () => {
    const clock = new ServerClock(redis, 0, 3_600_000);
    await clock.sync();
    const s = (clock as unknown as { sample: { serverMs: number; monoMs: number } }).sample;
    // as if taken an hour ago: 3.6 s of doubt
    s.monoMs -= 3_600_000;
    s.serverMs -= 3_600_000;
    const now = await serverNowMs(redis);
    expect(clock.surelyAfter(now - 10_000)).toBe(true);
    expect(clock.surelyAfter(now - 2_000)).toBe(false);
    expect(clock.surelyBefore(now + 2_000)).toBe(false);
    expect(clock.surelyBefore(now + 10_000)).toBe(true);
  });
});
