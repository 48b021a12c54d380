/**
 * The API under overload, as its own process, with the overload made by construction rather than
 * by hoping the machine is slow enough: a segment lock held by another client keeps
 * purchases waiting until the in-flight cap (MAX_INFLIGHT) is reached; past it purchases are shed
 * with 503 overloaded + Retry-After while the probes keep answering. A burst of 1,000 buyers who
 * retry as a client library would (after Retry-After) then buys exactly the 100 units, also with two
 * CPU hogs beside the API. Assertions are on answers and counts, never on time; the latency figures
 * live in `npm run bench:burst` and `npm run bench`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/lock/index.js';
import { createRedisClient } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';
import { runCli, waitFor, type CliRun } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { freePort } from '../support/ports.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const CAP = 40;
let api: CliRun;
let base: string;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = runCli(['serve'], {
    REDIS_URL: ns.redisUrl,
    DATABASE_URL: ns.databaseUrl,
    KEY_PREFIX: ns.id,
    QUEUE_PREFIX: `{${ns.id}q}`,
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN: ns.adminToken,
    PORT: String(port),
    MAX_INFLIGHT: String(CAP),
    // purchases wait for the held lock instead of timing out: they stay in flight
    LOCK_WAIT_MS: '60000',
    LOCK_QUEUE_MS: '60000',
    // production's level: a log line per refusal is what once buried the probes
    LOG_LEVEL: 'info',
  });
  await waitFor(
    () => `the API (output so far:\n${api.output()})`,
    async () => (await fetch(`${base}/readyz`)).ok,
    60_000,
  );
});
afterAll(async () => {
  api.child.kill('SIGTERM');
  await api.exited;
});

async function seedGlobal(total: number): Promise<string> {
  const productId = `g${randomBytes(4).toString('hex')}`;
  const res = await fetch(`${base}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ total, segments: 1, strategy: 'global' }),
  });
  expect(res.status).toBe(201);
  return productId;
}

interface Answer {
  status: number;
  code: string;
  retryAfter: string | null;
}

async function purchase(productId: string, user: string): Promise<Answer> {
  const res = await fetch(`${base}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user },
    body: JSON.stringify({ productId }),
  });
  const body = (await res.json()) as { code?: string; type?: string };
  return {
    status: res.status,
    // problem types are urn:seckill:problem:<code>
    code: body.code ?? String(body.type ?? '').replace(/^.*:/, ''),
    retryAfter: res.headers.get('retry-after'),
  };
}

async function productState(productId: string): Promise<{ remaining: number; sold: number }> {
  const res = await fetch(`${base}/admin/products/${productId}`, { headers: admin });
  return (await res.json()) as { remaining: number; sold: number };
}

const tally = (answers: Answer[]) => {
  const count: Record<string, number> = {};
  for (const a of answers) {
    const k = a.status === 202 ? '202' : `${a.status} ${a.code}`;
    count[k] = (count[k] ?? 0) + 1;
  }
  return count;
};

describe('probes while purchases fill the in-flight cap', () => {
  it('the cap sheds the excess with 503 overloaded + Retry-After, probes answer 200, the held purchases then sell exactly', async () => {
    const productId = await seedGlobal(1_000);
    const redis = createRedisClient({ url: ns.redisUrl }, { name: 'overload-holder' });
    const sub = createRedisClient(
      { url: ns.redisUrl },
      { name: 'overload-sub', role: 'subscriber' },
    );
    const pubsub = new PubSub(sub);
    const locks = new LockClient({ redis, pubsub, keys });
    const held = await locks.acquire(keys.segmentLockName(productId, 0), { leaseMs: 120_000 });
    expect(held).toBeTruthy();
    let released = false;
    try {
      const answers: Answer[] = [];
      const all = Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          purchase(productId, `o${i}`).then((a) => {
            answers.push(a);
            return a;
          }),
        ),
      );
      // CAP purchases wait for the lock; every other one is shed at once
      await waitFor(
        () =>
          `200 - ${CAP} purchases shed (${answers.length} answered: ${JSON.stringify(tally(answers))})`,
        async () => answers.length >= 200 - CAP,
        60_000,
        50,
      );
      expect(tally(answers)).toEqual({ '503 overloaded': 200 - CAP });
      expect(answers.every((a) => a.retryAfter === '1')).toBe(true);
      // the cap is reached right now: probes are answered, a purchase is shed
      for (const probe of ['healthz', 'readyz', 'healthz', 'readyz']) {
        const res = await fetch(`${base}/${probe}`, { signal: AbortSignal.timeout(30_000) });
        expect(res.status).toBe(200);
      }
      expect(await purchase(productId, 'one-more')).toMatchObject({
        status: 503,
        code: 'overloaded',
        retryAfter: '1',
      });
      await held!.release();
      released = true;
      const final = tally(await all);
      expect(final).toEqual({ '202': CAP, '503 overloaded': 200 - CAP });
      expect(await productState(productId)).toMatchObject({ remaining: 1_000 - CAP, sold: CAP });
    } finally {
      if (!released) await held?.release();
      await locks.close();
      pubsub.close();
      redis.disconnect();
      sub.disconnect();
    }
  });
});

describe('a burst of 1,000 buyers on 100 units, global lock, buyers retrying after Retry-After', () => {
  /** Each buyer tries until a final answer (202 or 409), waiting Retry-After after a 503. */
  async function burst(
    productId: string,
  ): Promise<{ final: Record<string, number>; retried: number }> {
    let retried = 0;
    const finals = await Promise.all(
      Array.from({ length: 1_000 }, async (_, i) => {
        for (let attempt = 0; attempt < 100; attempt++) {
          const a = await purchase(productId, `b${i}`);
          if (a.status !== 503) return a;
          expect(a.retryAfter).toMatch(/^\d+$/);
          retried++;
          // the scenario: a client honouring Retry-After
          await new Promise((r) => setTimeout(r, Number(a.retryAfter) * 1_000));
        }
        throw new Error(`buyer b${i}: 100 answers of 503`);
      }),
    );
    return { final: tally(finals), retried };
  }

  it('sells exactly 100: 100 accepted, 900 sold out, nothing left', async () => {
    const productId = await seedGlobal(100);
    const { final } = await burst(productId);
    expect(final).toEqual({ '202': 100, '409 sold-out': 900 });
    expect(await productState(productId)).toMatchObject({ remaining: 0, sold: 100 });
  });

  it('sells exactly 100 with two CPU hogs beside the API', async () => {
    const productId = await seedGlobal(100);
    const hogs: ChildProcess[] = [0, 1].map(() =>
      spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
    );
    try {
      const { final } = await burst(productId);
      expect(final).toEqual({ '202': 100, '409 sold-out': 900 });
      expect(await productState(productId)).toMatchObject({ remaining: 0, sold: 100 });
    } finally {
      for (const h of hogs) h.kill('SIGKILL');
    }
  });
});
