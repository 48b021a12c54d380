import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import { startTestRedis } from '../support/servers.js';

const ns = useNamespace();
let redis: Awaited<ReturnType<typeof startTestRedis>>;
let app: RunningApp;

beforeAll(async () => {
  redis = await startTestRedis();
  app = await startApp(ns.config({ REDIS_URL: redis.url }));
});
afterAll(async () => {
  await app.close();
  await redis.stop().catch(() => {});
});

describe('POST /seckill while Redis is down', () => {
  it('answers 503 + Retry-After as problem+json, never a bare 500', async () => {
    const seed = await fetch(`${app.url}/admin/products/fault`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ total: 5, strategy: 'lockfree', segments: 2 }),
    });
    expect(seed.status).toBe(201);
    await redis.stop();
    for (const productId of ['fault', 'never-seeded']) {
      const res = await fetch(`${app.url}/seckill`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-id': 'u1' },
        body: JSON.stringify({ productId }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { type: string }).type).toBe(
        'urn:seckill:problem:store-unavailable',
      );
    }
    // a product this process never read, without an identity: it cannot be known, so the store's
    // answer (not a 401 after a wasted wait, nor a second wait in the sale)
    const anonymous = await fetch(`${app.url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ productId: 'never-read' }),
    });
    expect(anonymous.status).toBe(503);
    expect(((await anonymous.json()) as { type: string }).type).toBe(
      'urn:seckill:problem:store-unavailable',
    );
  });
});
