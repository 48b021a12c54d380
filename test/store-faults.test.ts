/**
 * Stores away: a frozen PostgreSQL (SIGSTOP on its whole process group) and a stopped Redis.
 * Every route answers within a bound, with a 503 problem where it needs the store, and from
 * Redis where it can (a pending order, for its buyer and for an admin).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../src/db/index.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { RunningPostgres } from '../src/launcher/postgres-server.js';
import { startApp, type RunningApp } from './support/app.js';
import { useNamespace } from './support/namespace.js';
import {
  stackProcess,
  waitForDrainedOutbox,
  waitForRows,
  type StackProcess,
} from './support/orders.js';
import { startTestPostgres, startTestRedis, tempDir } from './support/servers.js';

const ns = useNamespace();

function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
      } catch {
        return false;
      }
    })
    .map(Number);
}
const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

async function timed(url: string, init: RequestInit = {}) {
  const started = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, ms: Date.now() - started };
}

describe('PostgreSQL frozen', () => {
  const dir = tempDir('frozen-pg');
  let pg: RunningPostgres;
  let app: RunningApp;
  let worker: StackProcess;
  // PostgreSQL's backends each lead a process group of their own (setsid): signal them one by one
  const freeze = (signal: 'SIGSTOP' | 'SIGCONT') => {
    for (const pid of [pg.process.pid, ...childrenOf(pg.process.pid)]) process.kill(pid, signal);
  };

  beforeAll(async () => {
    pg = await startTestPostgres(join(dir.path, 'cluster'));
    const db = createDb(pg.url);
    await migrateToLatest(db);
    await db.destroy();
    const config = ns.config({
      DATABASE_URL: pg.url,
      PG_CONNECT_TIMEOUT_MS: '1000',
      PG_STATEMENT_TIMEOUT_MS: '1000',
    });
    app = await startApp(config);
    worker = await stackProcess(config, { worker: true });
  });
  afterAll(async () => {
    try {
      freeze('SIGCONT');
    } catch {
      // already running
    }
    await worker?.close();
    await app?.close();
    await pg?.stop();
    dir.remove();
  });

  it('answers pending orders from Redis (buyer and admin), and 503 where PostgreSQL is needed, each within a bound', async () => {
    const productId = `p${randomBytes(4).toString('hex')}`;
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ total: 5, strategy: 'lockfree', segments: 2 }),
    });
    expect(seeded.status).toBe(201);
    const buy = (user: string) =>
      timed(`${app.url}/seckill`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-id': user },
        body: JSON.stringify({ productId }),
      });
    const persisted = (await buy('early')).body.orderId as string;
    await waitForRows(worker.rt.db, productId, 1);
    await waitForDrainedOutbox(worker, productId);
    await worker.close(); // nothing persists from here on: the next order stays pending

    const pendingOrder = (await buy('late')).body.orderId as string;
    freeze('SIGSTOP');
    const bound = 5_000;

    const buyerView = await timed(`${app.url}/orders/${pendingOrder}`, {
      headers: { 'x-user-id': 'late' },
    });
    expect(buyerView.status).toBe(200);
    expect(buyerView.body).toMatchObject({ orderId: pendingOrder, status: 'pending', productId });
    expect(buyerView.ms).toBeLessThan(bound);

    const adminView = await timed(`${app.url}/orders/${pendingOrder}`, { headers: admin });
    expect(adminView.status).toBe(200);
    expect(adminView.body).toMatchObject({
      orderId: pendingOrder,
      status: 'pending',
      userId: 'late',
    });

    for (const [what, url, init] of [
      [
        'a persisted order',
        `${app.url}/orders/${persisted}`,
        { headers: { 'x-user-id': 'early' } },
      ],
      ['the admin product view', `${app.url}/admin/products/${productId}`, { headers: admin }],
      [
        'reconciliation',
        `${app.url}/admin/products/${productId}/reconcile`,
        { method: 'POST', headers: admin },
      ],
    ] as const) {
      const r = await timed(url, init);
      expect(r.status, what).toBe(503);
      expect(r.body.type, what).toBe('urn:seckill:problem:store-unavailable');
      expect(r.ms, what).toBeLessThan(bound);
    }

    freeze('SIGCONT');
    const back = await timed(`${app.url}/orders/${persisted}`, {
      headers: { 'x-user-id': 'early' },
    });
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('persisted');
  });
});

describe('Redis stopped', () => {
  it('GET /products/:id answers a fast 503, not a 500 after seconds', async () => {
    const redis = await startTestRedis();
    const app = await startApp(ns.config({ REDIS_URL: redis.url }));
    try {
      await fetch(`${app.url}/admin/products/gone`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ total: 5, strategy: 'lockfree', segments: 1 }),
      });
      await redis.stop();
      for (const productId of ['gone', 'never']) {
        const r = await timed(`${app.url}/products/${productId}`);
        expect(r.status).toBe(503);
        expect(r.body.type).toBe('urn:seckill:problem:store-unavailable');
        expect(r.ms).toBeLessThan(2_000);
      }
    } finally {
      await app.close();
      await redis.stop().catch(() => {});
    }
  });
});
