/**
 * CORS (CORS_ORIGINS): a shop's page on its own origin calls the API from a browser. Preflights
 * are answered ahead of Express with no Redis command; an allowed origin is echoed with the
 * headers a client reads exposed, another origin gets no CORS header and its preflight a 403;
 * credentials only when configured; the fast path and Express send the same headers in the same
 * order. Then in a real Chromium: a page on one port reads a product and joins its line on the
 * API's port; a page on a port not allowed is blocked, and its join never reaches the API.
 */
import { createServer, request, type Server } from 'node:http';
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
import { seedSale } from '../support/factories.js';

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

const seed = (productId: string, body: Record<string, unknown> = {}) =>
  seedSale(fast.url, productId, { strategy: 'segmented', segments: 2, total: 10, ...body });

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
      'https://*.shop.example',
    ]) {
      expect(() => loadConfig({ AUTH_MODE: 'dev', CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
    }
    const ok = loadConfig({
      AUTH_MODE: 'dev',
      CORS_ORIGINS: 'https://shop.example, http://127.0.0.1:3080',
    });
    expect(ok.http.cors.origins).toEqual(['https://shop.example', 'http://127.0.0.1:3080']);
    expect(loadConfig({ AUTH_MODE: 'dev' }).http.cors.origins).toEqual([]);
    // a wildcard is refused saying so, not taken as a literal host
    expect(() =>
      loadConfig({ AUTH_MODE: 'dev', CORS_ORIGINS: 'https://shop.example,https://*.shop.example' }),
    ).toThrow(/CORS_ORIGINS.*wildcards are not supported; list each origin/);
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
          /Content-Type.*Idempotency-Key.*Sale-Token.*X-User-Id.*Challenge.*Shopper-Fingerprint/,
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

describe('the admin surface answers no other origin', () => {
  /** the shop's page's origin (set once the servers started) */
  const origin = () => ({ origin: shopOrigin });

  it('refuses an admin preflight and sends no CORS header on admin answers, on both paths and with credentials allowed', async () => {
    for (const app of [fast, slow, withCredentials]) {
      for (const path of ['/admin/orders', '/ADMIN/orders', '/admin/dashboard/login']) {
        const pre = await fetch(`${app.url}${path}`, {
          method: 'OPTIONS',
          headers: PREFLIGHT(shopOrigin),
        });
        expect(pre.status, path).toBe(403);
        expect(pre.headers.get('access-control-allow-origin')).toBeNull();
        expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
        expect(((await pre.json()) as { detail: string }).detail).toMatch(/admin API/);
      }
      for (const path of ['/admin/orders', '/ADMIN/orders', '/Admin/audit']) {
        const res = await fetch(`${app.url}${path}`, {
          headers: { ...origin(), authorization: `Bearer ${ns.adminToken}` },
        });
        expect(res.status, path).toBe(200);
        expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
        expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
        expect(res.headers.get('access-control-expose-headers'), path).toBeNull();
      }
    }
    // the shop's routes keep theirs
    const shopRead = await fetch(`${withCredentials.url}/healthz`, { headers: origin() });
    expect(shopRead.headers.get('access-control-allow-origin')).toBe(shopOrigin);
    expect(shopRead.headers.get('access-control-allow-credentials')).toBe('true');
  });

  it('refuses a browser request another site or origin started, reads included (Sec-Fetch-Site)', async () => {
    const login = await fetch(`${withCredentials.url}/admin/dashboard/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
      body: JSON.stringify({ token: ns.adminToken }),
    });
    expect(login.status).toBe(204);
    const cookie = login.headers
      .getSetCookie()
      .find((c) => c.startsWith('seckill_admin='))!
      .split(';')[0]!;
    // node:http, not fetch: fetch sends Sec-Fetch-Mode: cors whatever it is given
    const read = (
      path: string,
      fetchMeta: Record<string, string>,
      auth: Record<string, string> = { cookie },
    ) =>
      new Promise<{ status: number; cors: string | undefined; body: string }>((resolve, reject) => {
        const req = request(`${withCredentials.url}${path}`, {
          headers: { ...origin(), ...auth, ...fetchMeta },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              cors: res.headers['access-control-allow-origin'],
              body,
            }),
          );
        });
        req.on('error', reject);
        req.end();
      });
    const bearer = { authorization: `Bearer ${ns.adminToken}` };
    const cases: Array<[string, Record<string, string>, number]> = [
      ['/admin/orders', { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }, 403],
      ['/admin/orders', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' }, 403],
      ['/admin/audit', { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors' }, 403],
      ['/admin/dashboard/stream', { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors' }, 403],
      // framed by another site: no navigation of the top window
      [
        '/admin/dashboard',
        {
          'sec-fetch-site': 'cross-site',
          'sec-fetch-mode': 'navigate',
          'sec-fetch-dest': 'iframe',
        },
        403,
      ],
      ['/admin/orders', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' }, 200],
      ['/admin/orders', { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' }, 200],
      ['/admin/orders', {}, 200],
      // a link followed from another site: the page is the user's to see
      [
        '/admin/dashboard',
        {
          'sec-fetch-site': 'cross-site',
          'sec-fetch-mode': 'navigate',
          'sec-fetch-dest': 'document',
        },
        200,
      ],
    ];
    for (const [path, meta, status] of cases) {
      const res = await read(path, meta);
      expect(res.status, `${path} ${JSON.stringify(meta)}`).toBe(status);
      expect(res.cors).toBeUndefined();
      if (status === 403) {
        expect((JSON.parse(res.body) as { type: string }).type).toMatch(/cross-site-request$/);
      }
    }
    // the bearer token is held to it too, and a same-site login or logout is refused
    expect((await read('/admin/orders', { 'sec-fetch-site': 'same-site' }, bearer)).status).toBe(
      403,
    );
    for (const path of ['/admin/dashboard/login', '/admin/dashboard/logout']) {
      const res = await fetch(`${withCredentials.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-site', cookie },
        body: JSON.stringify({ token: ns.adminToken }),
      });
      expect(res.status, path).toBe(403);
    }
    // the session is still open: the logout above was refused
    expect((await read('/admin/orders', { 'sec-fetch-site': 'same-origin' })).status).toBe(200);
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

  it("cannot read the admin API with an admin's session cookie, even from an allowed origin with credentials", async () => {
    const context = await browser!.newContext();
    try {
      // the admin logs in on the API's own origin, as the dashboard does
      const admin = await context.newPage();
      await admin.goto(`${withCredentials.url}/admin/dashboard`);
      const own = await admin.evaluate(async (token) => {
        const login = await fetch('/admin/dashboard/login', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token }),
        });
        const orders = await fetch('/admin/orders');
        return { login: login.status, orders: orders.status };
      }, ns.adminToken);
      expect(own).toEqual({ login: 204, orders: 200 });
      // the shop's page (listed in CORS_ORIGINS, credentials allowed; same site: another port)
      const shopPage = await context.newPage();
      await shopPage.goto(`${shopOrigin}/`);
      const stolen = await shopPage.evaluate(async (api) => {
        const out: Record<string, string> = {};
        for (const path of ['/admin/orders', '/admin/audit', '/healthz']) {
          try {
            const res = await fetch(`${api}${path}`, { credentials: 'include' });
            out[path] = `read ${res.status}`;
          } catch (err) {
            out[path] = String(err);
          }
        }
        return out;
      }, withCredentials.url);
      expect(stolen).toEqual({
        '/admin/orders': expect.stringMatching(/TypeError: Failed to fetch/),
        '/admin/audit': expect.stringMatching(/TypeError: Failed to fetch/),
        // the shop's own routes stay readable from it
        '/healthz': 'read 200',
      });
    } finally {
      await context.close();
    }
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
