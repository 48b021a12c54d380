/**
 * A client address's bucket through each process's local allowance (src/access/rate-allowance.ts):
 * cells leased several at a time from the one GCRA bucket in Redis, never more admitted across two
 * processes than the bucket gives, and one take per request for small limits (as without leases).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_MS, RateAllowances, leaseCells } from '../../src/access/rate-allowance.js';
import type { RateLimit } from '../../src/config/index.js';
import { createRedisClient, type RedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { takeRate } from '../../src/redis/rate-limit.js';
import { sleep } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const config = ns.config();
const keys = new Keys(ns.id);
let redis: RedisClient;

beforeAll(() => {
  redis = createRedisClient(config.redis, { name: 'test-allowance' });
});
afterAll(() => redis.disconnect());

const newAddress = () => keys.rateLimit('seckill', 'ip', `10.0.${randomBytes(2).join('.')}`);
async function redisUs(): Promise<number> {
  const [sec, usec] = await redis.time();
  return Number(sec) * 1_000_000 + Number(usec);
}

/** One API process's allowances, counting the Redis takes (leases) it sends and the cells given. */
function processAllowances() {
  const sent = { leases: 0, cells: 0 };
  const allowances = new RateAllowances(async (key, limit, want) => {
    sent.leases++;
    const d = await takeRate(redis, key, limit, want);
    sent.cells += d.taken;
    return d;
  });
  return { allowances, sent };
}

describe('a client address bucket leased by each process', () => {
  it('sizes a lease from the limit: 1 cell for small limits, a fraction of burst and of 50 ms of rate, at most 64', () => {
    const limit = (rate: number, burst = rate, periodMs = 1_000): RateLimit => ({
      name: 'ip',
      rate,
      periodMs,
      burst,
    });
    expect(LEASE_MS).toBe(50);
    expect(leaseCells(limit(20))).toBe(1);
    expect(leaseCells(limit(600, 600, 60_000))).toBe(1);
    expect(leaseCells(limit(400))).toBe(20); // 50 ms of 400/s
    expect(leaseCells(limit(10_000, 160))).toBe(10); // a sixteenth of the burst
    expect(leaseCells(limit(100_000_000))).toBe(64);
  });

  it('two processes together never admit more than burst + rate x t, and ask Redis once per lease', async () => {
    const limit: RateLimit = { name: 'ip', rate: 400, periodMs: 1_000, burst: 400 };
    const key = newAddress();
    const procs = [processAllowances(), processAllowances()];
    const first = await redisUs();
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => procs[i % 2]!.allowances.take(key, limit)),
    );
    const last = await redisUs();
    const admitted = answers.filter((d) => d.allowed).length;
    // GCRA: burst + one cell per 2.5 ms of the Redis time the takes spanned, whoever leased them
    const most = limit.burst + Math.floor((last - first) / 2_500);
    expect(admitted).toBeLessThanOrEqual(most);
    // every cell leased was spent (a thousand requests were waiting for them), none twice
    const given = procs[0]!.sent.cells + procs[1]!.sent.cells;
    expect(admitted).toBe(given);
    expect(admitted).toBeGreaterThanOrEqual(limit.burst);
    expect(answers.filter((d) => !d.allowed).length).toBe(1_000 - admitted);
    // a lease serves every request waiting for it, and its refusal too: a handful of takes, not
    // one per request
    const leases = procs[0]!.sent.leases + procs[1]!.sent.leases;
    expect(leases).toBeLessThan(50);
    const refused = answers.find((d) => !d.allowed)!;
    expect(refused.remaining).toBe(0);
    expect(refused.retryMs).toBeGreaterThanOrEqual(1);
  });

  it('drops the cells a lease left unspent once it ran out: under-admits, never over', async () => {
    const limit: RateLimit = { name: 'ip', rate: 400, periodMs: 1_000, burst: 400 };
    const key = newAddress();
    const { allowances, sent } = processAllowances();
    const one = await allowances.take(key, limit);
    expect(one).toMatchObject({ allowed: true, remaining: 380 + 19, taken: 1 });
    expect(sent).toEqual({ leases: 1, cells: 20 });
    // within the lease: spent in process, no Redis call
    expect((await allowances.take(key, limit)).allowed).toBe(true);
    expect(sent.leases).toBe(1);
    // the scenario: the lease runs out
    await sleep(LEASE_MS + 10);
    expect((await allowances.take(key, limit)).allowed).toBe(true);
    expect(sent).toEqual({ leases: 2, cells: 40 });
  });

  it('takes one cell per request for a small limit, as without an allowance', async () => {
    const limit: RateLimit = { name: 'ip', rate: 20, periodMs: 1_000, burst: 20 };
    const key = newAddress();
    const { allowances, sent } = processAllowances();
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => allowances.take(key, limit)),
    );
    expect(answers.filter((d) => d.allowed).length).toBeGreaterThanOrEqual(20);
    expect(sent.leases).toBe(30);
    expect(sent.cells).toBe(answers.filter((d) => d.allowed).length);
  });
});
