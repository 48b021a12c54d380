/**
 * Stores away: a frozen PostgreSQL (SIGSTOP on its whole process group) and a stopped Redis.
 * Every route answers within a bound, with a 503 problem where it needs the store, and from
 * Redis where it can (a pending order, for its buyer and for an admin).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { RunningPostgres } from '../../src/launcher/postgres-server.js';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import {
  stackProcess,
  waitForDrainedOutbox,
  waitForRows,
  type StackProcess,
} from '../support/orders.js';
import { startTestPostgres, startTestRedis, tempDir } from '../support/servers.js';
import { signalWithChildren } from '../support/signals.js';

const ns = useNamespace();

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

/**
 * A request that must be answered: a store that hangs the API (no timeout of its own) fails it by
 * the abort, far past the stores' own timeouts (1 s). No latency is asserted: that is the benchmarks'.
 */
async function answered(url: string, init: RequestInit = {}) {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body };
}

describe('PostgreSQL frozen', () => {
  const dir = tempDir('frozen-pg');
  let pg: RunningPostgres;
  let app: RunningApp;
  let worker: StackProcess;
  // PostgreSQL's backends each lead a process group of their own (setsid): signal them one by one
  // (a backend may exit between the listing and its signal: signalWithChildren skips it)
  const freeze = (sig: 'SIGSTOP' | 'SIGCONT') => signalWithChildren(pg.process.pid, sig);

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
    if (pg) freeze('SIGCONT');
    await worker?.close();
    await app?.close();
    await pg?.stop();
    dir.remove();
  });

  it('answers pending orders from Redis (buyer and admin), and 503 where PostgreSQL is needed', async () => {
    const productId = `p${randomBytes(4).toString('hex')}`;
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ total: 5, strategy: 'lockfree', segments: 2 }),
    });
    expect(seeded.status).toBe(201);
    const buy = (user: string) =>
      answered(`${app.url}/seckill`, {
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

    const buyerView = await answered(`${app.url}/orders/${pendingOrder}`, {
      headers: { 'x-user-id': 'late' },
    });
    expect(buyerView.status).toBe(200);
    expect(buyerView.body).toMatchObject({ orderId: pendingOrder, status: 'pending', productId });

    const adminView = await answered(`${app.url}/orders/${pendingOrder}`, { headers: admin });
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
      const r = await answered(url, init);
      expect(r.status, what).toBe(503);
      expect(r.body.type, what).toBe('urn:seckill:problem:store-unavailable');
    }

    freeze('SIGCONT');
    const back = await answered(`${app.url}/orders/${persisted}`, {
      headers: { 'x-user-id': 'early' },
    });
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('persisted');
  });
});

describe('Redis stopped', () => {
  it('GET /products/:id answers 503 store-unavailable, not a 500', async () => {
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
        const r = await answered(`${app.url}/products/${productId}`);
        expect(r.status).toBe(503);
        expect(r.body.type).toBe('urn:seckill:problem:store-unavailable');
      }
    } finally {
      await app.close();
      await redis.stop().catch(() => {});
    }
  });
});
