/**
 * The API under overload, as its own process: probes stay fast while 2 000 connections hammer a
 * global-lock sale, and a burst of 1 000 buyers all in flight at once sells the stock (no client
 * retries), also with two CPU hogs beside it.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor, type CliRun } from './support/cli.js';
import { useNamespace } from './support/namespace.js';
import { freePort } from './support/ports.js';

const ROOT = join(import.meta.dirname, '..');
const ns = useNamespace();
const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
let api: CliRun;
let base: string;

/** wrk, as the benchmark uses it: on PATH, or installed with apt-get when root on Debian. */
function wrk(): string {
  const find = () => ['/usr/bin/wrk', '/usr/local/bin/wrk'].find((p) => existsSync(p));
  const found = find();
  if (found) return found;
  if (process.getuid?.() === 0 && existsSync('/etc/debian_version')) {
    execFileSync('apt-get', ['install', '-y', '-qq', 'wrk'], {
      stdio: 'ignore',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  }
  const installed = find();
  if (!installed)
    throw new Error('these tests need wrk (apt-get install wrk; .ci/run installs it)');
  return installed;
}

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = runCli(['serve'], {
    REDIS_URL: ns.redisUrl,
    DATABASE_URL: ns.databaseUrl,
    KEY_PREFIX: ns.id,
    QUEUE_PREFIX: `{${ns.id}q}`,
    AUTH_MODE: 'dev',
    ADMIN_TOKEN: ns.adminToken,
    PORT: String(port),
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
    body: JSON.stringify({ total, strategy: 'global' }),
  });
  expect(res.status).toBe(201);
  return productId;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;

describe('probes under overload', () => {
  it('answer within 100 ms at the 99th percentile while 2 000 connections hammer a global lock', async () => {
    const productId = await seedGlobal(10_000_000);
    const load = new Promise<string>((resolve, reject) =>
      execFile(
        wrk(),
        [
          '-t2',
          '-c2000',
          '-d6s',
          '-s',
          join(ROOT, 'load-tests', 'bench', 'wrk.lua'),
          base,
          '--',
          '/seckill',
          productId,
          'hammer',
        ],
        (err, out) => (err ? reject(err) : resolve(out)),
      ),
    );
    await new Promise((r) => setTimeout(r, 1_000)); // the overload is on
    const latencies: Record<'healthz' | 'readyz', number[]> = { healthz: [], readyz: [] };
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      for (const probe of ['healthz', 'readyz'] as const) {
        const started = performance.now();
        const res = await fetch(`${base}/${probe}`, { signal: AbortSignal.timeout(5_000) });
        await res.arrayBuffer();
        expect(res.status).toBe(200);
        latencies[probe].push(performance.now() - started);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    const figures = JSON.parse((await load).split('\n').find((l) => l.startsWith('{'))!) as {
      requests: number;
    };
    expect(figures.requests).toBeGreaterThan(5_000); // it was an overload
    expect(latencies.healthz.length).toBeGreaterThan(50);
    expect(p99(latencies.healthz)).toBeLessThan(100);
    expect(p99(latencies.readyz)).toBeLessThan(100);
  });
});

describe('a burst of 1 000 buyers on 100 units, global lock, no client retries', () => {
  async function burst(productId: string): Promise<Record<string, number>> {
    const statuses = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        fetch(`${base}/seckill`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user-id': `b${i}` },
          body: JSON.stringify({ productId }),
        }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    const count: Record<string, number> = {};
    for (const s of statuses) count[s] = (count[s] ?? 0) + 1;
    return count;
  }

  async function remaining(productId: string): Promise<number> {
    const r = (await (await fetch(`${base}/products/${productId}`)).json()) as {
      remaining: number;
    };
    return r.remaining;
  }

  it('sells at least 90 of them, never more than 100', async () => {
    const productId = await seedGlobal(100);
    const count = await burst(productId);
    expect(count['202'] ?? 0).toBeGreaterThanOrEqual(90);
    expect(count['202']).toBeLessThanOrEqual(100);
    expect(Object.keys(count).every((s) => ['202', '409', '503'].includes(s))).toBe(true);
    expect(await remaining(productId)).toBe(100 - count['202']!);
  });

  it('sells at least 90 of them with two CPU hogs beside the API', async () => {
    const productId = await seedGlobal(100);
    const hogs: ChildProcess[] = [0, 1].map(() =>
      spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
    );
    try {
      await new Promise((r) => setTimeout(r, 300));
      const count = await burst(productId);
      expect(count['202'] ?? 0).toBeGreaterThanOrEqual(90);
      expect(count['202']).toBeLessThanOrEqual(100);
      expect(await remaining(productId)).toBe(100 - count['202']!);
    } finally {
      for (const h of hogs) h.kill('SIGKILL');
    }
  });
});
