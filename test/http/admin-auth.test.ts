/**
 * Admin access through two real API processes sharing Redis: wrong admin tokens throttled per
 * client address (bearer, dashboard login, an admin's order read), sessions that a logout ends
 * everywhere, the session cookie's scope (/admin: the dashboard and Bull Board) and attributes,
 * and cookies in any but their one encoding refused.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import { problemOf } from '../support/payments.js';
import { PREFIX } from '../../src/services/operator/admin-access.js';

const ns = useNamespace();
/** five wrong tokens at once per address, then one every 12 s */
const GUESSES = 5;
let a: RunningApp;
let b: RunningApp;

beforeAll(async () => {
  const env = { TRUST_PROXY: 'true', ADMIN_GUESS_LIMIT: `${GUESSES}/m` };
  a = await startApp(ns.config(env));
  b = await startApp(ns.config(env));
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const newIp = () => `198.51.100.${1 + (randomBytes(1)[0]! % 250)}`;
let nextIp = 0;
/** an address no other test uses */
const freshIp = () => `203.0.113.${++nextIp}`;

const adminGet = (base: string, path: string, o: { token?: string; ip: string; cookie?: string }) =>
  fetch(`${base}${path}`, {
    headers: {
      'x-forwarded-for': o.ip,
      ...(o.token !== undefined && { authorization: `Bearer ${o.token}` }),
      ...(o.cookie !== undefined && { cookie: o.cookie }),
    },
  });

const login = (base: string, token: string, ip: string, extra: Record<string, string> = {}) =>
  fetch(`${base}/admin/dashboard/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': ip, ...extra },
    body: JSON.stringify({ token }),
  });

/** The session cookie (name=value) a login set, and its attributes. */
async function session(base = a.url, extra: Record<string, string> = {}) {
  const res = await login(base, ns.adminToken, newIp(), extra);
  expect(res.status).toBe(204);
  const header = res.headers.getSetCookie().find((c) => c.startsWith('seckill_admin='))!;
  expect(header).toBeDefined();
  return { cookie: header.split(';')[0]!, header };
}

const PRODUCTS = '/admin/products/nope-no-such'; // an admin route: 404 once let in

describe('wrong admin tokens are throttled per client address (issue 26 item 9)', () => {
  it(`bearer: ${GUESSES} wrong tokens answer 403, then 429 with Retry-After for any guess from there, across processes; the right token still gets in (issue 46), unless the guesses start as it does`, async () => {
    const attacker = freshIp();
    for (let i = 0; i < GUESSES; i++) {
      // alternating processes: the count is shared through Redis
      const res = await adminGet(i % 2 ? b.url : a.url, PRODUCTS, {
        token: `wrong-guess-${i}-0123456789`,
        ip: attacker,
      });
      expect(res.status).toBe(403);
    }
    const limited = await adminGet(a.url, PRODUCTS, {
      token: 'wrong-again-0123456789',
      ip: attacker,
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await problemOf(limited)).code).toBe('too-many-guesses');
    // the right token from the throttled address gets in: guesses that do not start
    // as it does are in another bucket, so one client behind a shared address cannot lock it out
    const right = await adminGet(b.url, PRODUCTS, { token: ns.adminToken, ip: attacker });
    expect(right.status).toBe(404);
    // guesses that start as the admin token does share its bucket: past the limit, 429 for any
    // token starting so, the right one included (it must not stand out among them)
    const near = `${ns.adminToken.slice(0, PREFIX)}-near-guess-0123456789`;
    for (let i = 0; i < GUESSES; i++) {
      expect((await adminGet(a.url, PRODUCTS, { token: `${near}${i}`, ip: attacker })).status).toBe(
        403,
      );
    }
    expect((await adminGet(a.url, PRODUCTS, { token: near, ip: attacker })).status).toBe(429);
    expect((await adminGet(b.url, PRODUCTS, { token: ns.adminToken, ip: attacker })).status).toBe(
      429,
    );
    // the admin elsewhere is not locked out
    expect((await adminGet(a.url, PRODUCTS, { token: ns.adminToken, ip: freshIp() })).status).toBe(
      404,
    );
    // no token at all is no guess: 401 stays 401 for a fresh address
    expect((await adminGet(a.url, PRODUCTS, { ip: freshIp() })).status).toBe(401);
  });

  it(`dashboard login: ${GUESSES} wrong tokens answer 401, then 429 and no cookie; the right one still logs in`, async () => {
    const attacker = freshIp();
    for (let i = 0; i < GUESSES; i++) {
      expect((await login(i % 2 ? b.url : a.url, `wrong-login-${i}`, attacker)).status).toBe(401);
    }
    const limited = await login(a.url, 'wrong-login-again', attacker);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(limited.headers.get('set-cookie')).toBeNull();
    await problemOf(limited);
    // the right token is in a bucket of its own prefix: the wrong guesses did not lock it out
    expect((await login(a.url, ns.adminToken, attacker)).status).toBe(204);
    expect((await login(b.url, ns.adminToken, freshIp())).status).toBe(204);
    // bad input is no guess: 400, and counts for nothing
    const ip = freshIp();
    for (let i = 0; i < GUESSES + 2; i++) {
      expect((await login(a.url, 'x'.repeat(600), ip)).status).toBe(400);
    }
    expect((await login(a.url, ns.adminToken, ip)).status).toBe(204);
  });

  it("an admin's order read counts a wrong bearer as a guess too", async () => {
    const attacker = freshIp();
    const order = '/orders/00000000-0000-7000-8000-000000000000';
    for (let i = 0; i < GUESSES; i++) {
      const res = await adminGet(a.url, order, {
        token: `order-guess-${i}-0123456789`,
        ip: attacker,
      });
      expect(res.status).toBe(401); // dev mode: not an admin, and no X-User-Id
    }
    const again = { token: 'order-guess-again-0123456789', ip: attacker };
    expect((await adminGet(b.url, order, again)).status).toBe(429);
    // the right token starts otherwise than those guesses: not locked out by them
    expect((await adminGet(b.url, order, { token: ns.adminToken, ip: attacker })).status).toBe(404);
    expect((await adminGet(b.url, order, { token: ns.adminToken, ip: freshIp() })).status).toBe(
      404,
    );
  });
});

describe('admin sessions', () => {
  it('one session cookie, path /admin, HttpOnly, SameSite=Strict; Secure behind TLS (X-Forwarded-Proto)', async () => {
    const plain = await session();
    expect(plain.header).toMatch(/; Path=\/admin(;|$)/);
    expect(plain.header).toMatch(/; HttpOnly/);
    expect(plain.header).toMatch(/; SameSite=Strict/);
    expect(plain.header).not.toMatch(/; Secure/);
    const tls = await session(a.url, { 'x-forwarded-proto': 'https' });
    expect(tls.header).toMatch(/; Secure/);
  });

  it('opens Bull Board and the admin API; the bearer keeps working; a cross-site change is refused', async () => {
    const { cookie } = await session();
    const ip = freshIp();
    const board = await adminGet(a.url, '/admin/queues', { cookie, ip });
    expect(board.status).toBe(200);
    expect(await board.text()).toMatch(/<html/i);
    const queues = await adminGet(b.url, '/admin/queues/api/queues', { cookie, ip });
    expect(queues.status).toBe(200);
    expect(JSON.stringify(await queues.json())).toContain('orders');
    expect((await adminGet(a.url, PRODUCTS, { cookie, ip })).status).toBe(404);
    expect((await adminGet(a.url, '/admin/queues', { token: ns.adminToken, ip })).status).toBe(200);
    expect((await adminGet(a.url, '/admin/queues', { ip })).status).toBe(401);
    const seed = (site: string) =>
      fetch(`${a.url}/admin/products/${ns.id}-csrf`, {
        method: 'PUT',
        headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': site },
        body: JSON.stringify({ total: 1, strategy: 'global' }),
      });
    expect((await seed('cross-site')).status).toBe(403);
    expect((await seed('same-site')).status).toBe(403);
    expect((await seed('same-origin')).status).toBe(201);
  });

  it('a logout ends the session in every API process (issue 26 item 10)', async () => {
    const { cookie } = await session(a.url);
    const ip = freshIp();
    const page = async (base: string) =>
      (await (await adminGet(base, '/admin/dashboard', { cookie, ip })).text()).includes(
        'id="login"',
      )
        ? 'login'
        : 'dashboard';
    expect(await page(a.url)).toBe('dashboard');
    expect(await page(b.url)).toBe('dashboard');
    expect((await adminGet(b.url, '/admin/queues', { cookie, ip })).status).toBe(200);

    const out = await fetch(`${b.url}/admin/dashboard/logout`, {
      method: 'POST',
      headers: { cookie },
    });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie().join()).toMatch(/seckill_admin=;/);
    // the same cookie, kept by someone, opens nothing on either process
    expect(await page(a.url)).toBe('login');
    expect(await page(b.url)).toBe('login');
    expect((await adminGet(a.url, '/admin/queues', { cookie, ip })).status).toBe(401);
    expect((await adminGet(a.url, '/admin/dashboard/stream', { cookie, ip })).status).toBe(401);
    // other sessions live on
    const other = await session(b.url);
    expect((await adminGet(a.url, '/admin/queues', { cookie: other.cookie, ip })).status).toBe(200);
  });

  it("a logout on one process ends that session's open dashboard streams on another (issue 37, item 5)", async () => {
    const [mine, other] = [await session(a.url), await session(a.url)];
    const ip = freshIp();
    const open = async (cookie: string) => {
      const res = await adminGet(a.url, '/admin/dashboard/stream', { cookie, ip });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      /** the snapshots read until `n` more arrived, or the stream ended (then `ended`) */
      const read = async (n: number) => {
        let got = 0;
        while (got < n) {
          const chunk = await reader.read();
          if (chunk.done) return { got, ended: true };
          got += (new TextDecoder().decode(chunk.value).match(/^data: /gm) ?? []).length;
        }
        return { got, ended: false };
      };
      return { read, cancel: () => reader.cancel() };
    };
    const ended = await open(mine.cookie);
    const lives = await open(other.cookie);
    expect(await ended.read(1)).toEqual({ got: 1, ended: false });
    expect(await lives.read(1)).toEqual({ got: 1, ended: false });

    const out = await fetch(`${b.url}/admin/dashboard/logout`, {
      method: 'POST',
      headers: { cookie: mine.cookie },
    });
    expect(out.status).toBe(204);
    // the logged-out session's stream ends at its next snapshot (about 0.5 s), sending no more
    expect(await ended.read(1_000)).toEqual({ got: 0, ended: true });
    // the other session's stream goes on
    expect(await lives.read(2)).toEqual({ got: 2, ended: false });
    await lives.cancel();
  });

  it('refuses a cookie in another encoding of its signature: padding, unused bits (issue 26 item 8)', async () => {
    const { cookie } = await session();
    const ip = freshIp();
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = ALPHABET.indexOf(cookie.at(-1)!);
    const lowBits = `${cookie.slice(0, -1)}${ALPHABET[last ^ 1]}`;
    for (const c of [`${cookie}=`, `${cookie}==`, lowBits]) {
      expect((await adminGet(a.url, '/admin/dashboard/stream', { cookie: c, ip })).status, c).toBe(
        401,
      );
    }
    const stream = await fetch(`${a.url}/admin/dashboard/stream`, {
      headers: { cookie, 'x-forwarded-for': ip },
    });
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
  });
});
