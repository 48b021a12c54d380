/**
 * CORS (CORS_ORIGINS): a shop's page on its own origin calls the API from a browser. Preflights
 * are answered ahead of Express with no Redis command; an allowed origin is echoed with the
 * headers a client reads exposed, another origin gets no CORS header and its preflight a 403;
 * credentials only when configured; the fast path and Express send the same headers in the same
 * order. Then in a real Chromium: a page on one port reads a product and joins its line on the
 * API's port; a page on a port not allowed is blocked, and its join never reaches the API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { CORS_EXPOSED_HEADERS } from '../../src/http/server/cors.js';
import { countCommands } from '../../src/redis/command-count.js';
import { startApp, type RunningApp } from '../support/app.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { useNamespace } from '../support/namespace.js';

sayIfNoBrowser('cors.test');

const ns = useNamespace();
/** the shop's page (allowed) and another site's (not), each a server of its own */
let shop: Server;
let other: Server;
let shopOrigin: string;
let otherOrigin: string;
let fast: RunningApp;
let slow: RunningApp;
let withCredentials: RunningApp;
let browser: Browser | undefined;
const reachedExpress = new Set<string>();

/** A blank page on its own port: the origin a script runs in. */
async function pageServer(): Promise<Server> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>shop</title><p>shop</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}
const originOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  const { default: express } = await import('express');
  const app = express.application as unknown as {
    handle(req: { headers: Record<string, unknown> }, ...rest: unknown[]): unknown;
  };
  const handle = app.handle;
  app.handle = function (req, ...rest) {
    reachedExpress.add(String(req.headers['x-request-id']));
    return handle.call(this, req, ...rest);
  };
  shop = await pageServer();
  other = await pageServer();
  shopOrigin = originOf(shop);
  otherOrigin = originOf(other);
  const env = {
    CORS_ORIGINS: `https://shop.example,${shopOrigin}`,
    SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-cors-test-0123456789',
  };
  fast = await startApp(ns.config({ ...env, FAST_PATH: 'true' }));
  slow = await startApp(ns.config({ ...env, FAST_PATH: 'false' }));
  withCredentials = await startApp(ns.config({ ...env, CORS_CREDENTIALS: 'true' }));
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  for (const app of [fast, slow, withCredentials]) await app?.close();
  for (const s of [shop, other]) await new Promise((r) => s?.close(r));
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

async function seed(productId: string, body: Record<string, unknown> = {}) {
  const res = await fetch(`${fast.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ strategy: 'segmented', segments: 2, total: 10, ...body }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

const PREFLIGHT = (origin: string) => ({
  origin,
  'access-control-request-method': 'POST',
  'access-control-request-headers': 'content-type, x-user-id, idempotency-key',
});

/** Every header but the ones that differ by construction, in the order they came. */
function headerList(res: Response): string[] {
  const out: string[] = [];
  res.headers.forEach((v, k) => {
    if (k !== 'date' && k !== 'x-request-id' && k !== 'connection' && k !== 'keep-alive') {
      out.push(`${k}: ${k === 'location' ? v.replace(/[0-9a-f-]{36}/, '<id>') : v}`);
    }
  });
  return out;
}

describe('CORS_ORIGINS', () => {
  it('refuses what is not an origin as a browser sends it', () => {
    for (const bad of [
      'shop.example',
      'https://shop.example/',
      'https://shop.example/path',
      'HTTPS://Shop.example',
      'https://shop.example:443',
      'ftp://shop.example',
      'https://a.example,,https://b.example',
    ]) {
      expect(() => loadConfig({ AUTH_MODE: 'dev', CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
    }
    const ok = loadConfig({
      AUTH_MODE: 'dev',
      CORS_ORIGINS: 'https://shop.example, http://127.0.0.1:3080',
    });
    expect(ok.http.cors.origins).toEqual(['https://shop.example', 'http://127.0.0.1:3080']);
    expect(loadConfig({ AUTH_MODE: 'dev' }).http.cors.origins).toEqual([]);
  });

  it('answers a preflight ahead of Express, with no Redis command', async () => {
    const count = countCommands(fast.rt.redis);
    try {
      for (const path of ['/seckill', '/products/p1/queue', '/products/p1']) {
        const id = `pre-${randomBytes(4).toString('hex')}`;
        const res = await fetch(`${fast.url}${path}`, {
          method: 'OPTIONS',
          headers: { ...PREFLIGHT(shopOrigin), 'x-request-id': id },
        });
        expect(res.status).toBe(204);
        expect(res.headers.get('access-control-allow-origin')).toBe(shopOrigin);
        expect(res.headers.get('access-control-allow-methods')).toContain('POST');
        expect(res.headers.get('access-control-allow-headers')).toMatch(
          /Content-Type.*Idempotency-Key.*Sale-Token.*X-User-Id/,
        );
        expect(res.headers.get('access-control-max-age')).toBe('600');
        expect(res.headers.get('access-control-allow-credentials')).toBeNull();
        expect(res.headers.get('vary')).toBe('Origin');
        expect(res.headers.get('x-request-id')).toBe(id);
        expect(reachedExpress.has(id), path).toBe(false);
      }
      expect(Object.fromEntries(count.byName)).toEqual({});
    } finally {
      count.stop();
    }
  });

  it('refuses the preflight of an origin not listed (403, no CORS header), on both paths', async () => {
    for (const app of [fast, slow]) {
      const res = await fetch(`${app.url}/seckill`, {
        method: 'OPTIONS',
        headers: PREFLIGHT(otherOrigin),
      });
      expect(res.status).toBe(403);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      const body = (await res.json()) as { type: string; detail: string };
      expect(body.type).toMatch(/cors-origin-not-allowed$/);
      expect(body.detail).toContain(otherOrigin);
    }
  });

  it('echoes an allowed origin and exposes what a client reads; another origin gets none', async () => {
    const productId = `c${randomBytes(4).toString('hex')}`;
    await seed(productId, { limitPerUser: 1 });
    const buy = (origin: string | undefined, user: string) =>
      fetch(`${fast.url}/seckill`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-user-id': user,
          ...(origin && { origin }),
        },
        body: JSON.stringify({ productId }),
      });
    const allowed = await buy(shopOrigin, 'u1');
    expect(allowed.status).toBe(202);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(shopOrigin);
    expect(allowed.headers.get('access-control-expose-headers')).toBe(
      CORS_EXPOSED_HEADERS.join(', '),
    );
    expect(allowed.headers.get('vary')).toBe('Origin');
    // a refusal too: the page must read its problem and Retry-After
    const again = await buy(shopOrigin, 'u1');
    expect(again.status).toBe(409);
    expect(again.headers.get('access-control-allow-origin')).toBe(shopOrigin);
    const stranger = await buy(otherOrigin, 'u2');
    expect(stranger.status).toBe(202);
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    expect(stranger.headers.get('access-control-expose-headers')).toBeNull();
    expect(stranger.headers.get('vary')).toBe('Origin');
    const noOrigin = await buy(undefined, 'u3');
    expect(noOrigin.headers.get('access-control-allow-origin')).toBeNull();
    expect(noOrigin.headers.get('vary')).toBe('Origin');
  });

  it('allows credentials only when CORS_CREDENTIALS says so', async () => {
    for (const [app, expected] of [
      [fast, null],
      [withCredentials, 'true'],
    ] as const) {
      const pre = await fetch(`${app.url}/seckill`, {
        method: 'OPTIONS',
        headers: PREFLIGHT('https://shop.example'),
      });
      expect(pre.headers.get('access-control-allow-credentials')).toBe(expected);
      const res = await fetch(`${app.url}/healthz`, {
        headers: { origin: 'https://shop.example' },
      });
      expect(res.headers.get('access-control-allow-credentials')).toBe(expected);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    }
  });

  it('sends the same headers in the same order on the fast path and through Express', async () => {
    const productId = `c${randomBytes(4).toString('hex')}`;
    await seed(productId, { limitPerUser: 5 });
    const cases: Array<{ path: string; init: RequestInit }> = [
      { path: '/seckill', init: { method: 'OPTIONS', headers: PREFLIGHT(shopOrigin) } },
      { path: '/seckill', init: { method: 'OPTIONS', headers: PREFLIGHT(otherOrigin) } },
      ...[shopOrigin, otherOrigin].map((origin) => ({
        path: '/seckill',
        init: {
          method: 'POST',
          headers: { origin, 'content-type': 'application/json', 'x-user-id': 'same' },
          body: JSON.stringify({ productId }),
        },
      })),
      { path: '/healthz', init: { headers: { origin: shopOrigin } } },
      { path: `/products/${productId}`, init: { headers: { origin: shopOrigin } } },
    ];
    for (const c of cases) {
      const [a, b] = [
        await fetch(`${fast.url}${c.path}`, c.init),
        await fetch(`${slow.url}${c.path}`, c.init),
      ];
      expect(a.status, c.path).toBe(b.status);
      expect(headerList(a), `${c.init.method ?? 'GET'} ${c.path}`).toEqual(headerList(b));
    }
  });
});

describe.skipIf(!CHROMIUM)('a shop page in Chromium', () => {
  const joinAndRead = async (a: { api: string; productId: string; user: string }) => {
    const { api, productId, user } = a;
    try {
      const product = await fetch(`${api}/products/${productId}`);
      const join = await fetch(`${api}/products/${productId}/queue`, {
        method: 'POST',
        headers: { 'x-user-id': user },
      });
      return {
        product: ((await product.json()) as { productId: string }).productId,
        join: join.status,
        state: ((await join.json()) as { state: string }).state,
        retryAfter: join.headers.get('retry-after'),
      };
    } catch (err) {
      return { blocked: String(err) };
    }
  };

  it("reads a product and joins its line from the shop's origin; another origin is blocked", async () => {
    const productId = `c${randomBytes(4).toString('hex')}`;
    // a room that opens in a minute: everyone waits in the lobby
    await seed(productId, {
      startsAt: new Date(Date.now() + 60_000).toISOString(),
      waitingRoom: { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 },
    });
    const context = await browser!.newContext();
    const run = async (origin: string) => {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      const user = `page${new URL(origin).port}`;
      return page.evaluate(joinAndRead, { api: fast.url, productId, user });
    };
    try {
      const allowed = (await run(shopOrigin)) as Record<string, unknown>;
      expect(allowed).toMatchObject({ product: productId, join: 200, state: 'waiting' });
      // exposed: the page reads when to poll again
      expect(Number(allowed.retryAfter)).toBeGreaterThan(0);
      const blocked = (await run(otherOrigin)) as Record<string, unknown>;
      expect(blocked.blocked).toMatch(/TypeError: Failed to fetch/);
    } finally {
      await context.close();
    }
    // the blocked page's join was never sent: its preflight was refused
    const poll = (user: string) =>
      fetch(`${fast.url}/products/${productId}/queue`, { headers: { 'x-user-id': user } });
    expect((await poll(`page${new URL(shopOrigin).port}`)).status).toBe(200);
    expect((await poll(`page${new URL(otherOrigin).port}`)).status).toBe(404);
  });

  it('is blocked everywhere when the API allows no origin', async () => {
    const closed = await startApp(ns.config({ FAST_PATH: 'true' }));
    try {
      const context = await browser!.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${shopOrigin}/`);
        const r = await page.evaluate(async (api) => {
          try {
            await fetch(`${api}/healthz`);
            return 'read';
          } catch (err) {
            return String(err);
          }
        }, closed.url);
        expect(r).toMatch(/TypeError: Failed to fetch/);
      } finally {
        await context.close();
      }
    } finally {
      await closed.close();
    }
  });
});
