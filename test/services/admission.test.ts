/**
 * Admission control through the real API: rate limits shared by two API processes, the IETF
 * RateLimit headers, sale tokens, load shedding, and sold out answered before any limiter.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { homeSegment } from '../../src/inventory/index.js';
import { countCommands } from '../../src/redis/command-count.js';
import { scriptNameOf } from '../../src/redis/scripts.js';
import { signSaleToken } from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
const TOKEN_SECRET = 'a-sale-token-secret-long-enough-0123456789';
let a: RunningApp;
let b: RunningApp;

beforeAll(async () => {
  const env = {
    RATE_LIMIT_USER: '5/s',
    RATE_LIMIT_IP: '20/s',
    TRUST_PROXY: 'true',
    SALE_TOKEN_SECRET: TOKEN_SECRET,
    SALE_TOKEN_TTL_S: '2',
    SALE_TOKEN_LEAD_S: '10',
  };
  a = await startApp(ns.config(env));
  b = await startApp(ns.config(env));
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const newUser = () => `u${randomBytes(5).toString('hex')}`;
/** a client address of its own (TRUST_PROXY=true: X-Forwarded-For names it) */
const newIp = () => `10.${[1, 2, 3].map(() => Math.floor(Math.random() * 250)).join('.')}`;
/** Redis's clock, the one the limiters run on (ms) */
async function redisMs(): Promise<number> {
  const [sec, usec] = await a.rt.redis.time();
  return Number(sec) * 1_000 + Math.floor(Number(usec) / 1_000);
}
const typeOf = async (res: Response) =>
  ((await res.json()) as { type?: string }).type?.replace('urn:seckill:problem:', '');

const seed = (productId: string, body: Record<string, unknown>, query = '') =>
  seedSale(
    a.url,
    productId,
    { strategy: 'lockfree', segments: 4, ...body },
    {
      query,
      status: [200, 201],
    },
  );

function buy(
  base: string,
  productId: string,
  user: string,
  o: { ip?: string; token?: string } = {},
) {
  return fetch(`${base}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': user,
      'x-forwarded-for': o.ip ?? newIp(),
      ...(o.token !== undefined && { 'sale-token': o.token }),
    },
    body: JSON.stringify({ productId }),
  });
}

function tokenFor(productId: string, user: string, base = a.url) {
  return fetch(`${base}/products/${productId}/sale-token`, {
    method: 'POST',
    headers: { 'x-user-id': user, 'x-forwarded-for': newIp() },
  });
}

describe('rate limits', () => {
  it('one shopper at 100 req/s for 3 s through two processes gets what GCRA allows over the time Redis saw; others are unaffected', async () => {
    const p = newProduct();
    await seed(p, { total: 10_000, limitPerUser: 1_000 });
    const bot = newUser();
    // The limiter runs on Redis's clock: bracket every request's server time between two readings
    // of it, rather than trusting the client's schedule (a loaded machine sends late and bunched).
    const first = await redisMs();
    const started = Date.now();
    const sent: Array<Promise<Response>> = [];
    const others: Array<Promise<Response>> = [];
    for (let i = 0; i < 300; i++) {
      // the scenario: the buyers paced at one per 10 ms
      await new Promise((r) => setTimeout(r, Math.max(0, started + i * 10 - Date.now())));
      sent.push(buy(i % 2 ? b.url : a.url, p, bot));
      // an ordinary shopper every 300 ms: one request each, never limited
      if (i % 30 === 0) others.push(buy(i % 2 ? a.url : b.url, p, newUser()));
    }
    const answers = await Promise.all(sent);
    const last = await redisMs();
    const statuses = answers.map((r) => r.status);
    const passed = statuses.filter((s) => s === 202).length;
    expect(statuses.filter((s) => s !== 202 && s !== 429)).toEqual([]);
    // GCRA at 5/s with a burst of 5: at most 5 + floor(span / 200 ms) in any span of server time,
    // and a fresh shopper's first 5 always pass
    const most = 5 + Math.floor((last - first) / 200);
    expect(passed).toBeGreaterThanOrEqual(5);
    expect(passed).toBeLessThanOrEqual(most);
    expect(most).toBeLessThan(300); // so some were limited (unless Redis saw them over 59 s)
    expect((await Promise.all(others)).map((r) => r.status)).toEqual(others.map(() => 202));

    const limited = answers.find((r) => r.status === 429)!;
    expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('ratelimit-policy')).toBe('"user";q=5;w=1, "ip";q=20;w=1');
    expect(limited.headers.get('ratelimit')).toMatch(/^"user";r=0;t=[01]$/);
    expect(await typeOf(limited)).toBe('rate-limited');
    const ok = answers.find((r) => r.status === 202)!;
    expect(ok.headers.get('ratelimit')).toMatch(/^"user";r=\d;t=\d$/);

    // a bucket left alone for burst x interval (1 s of Redis time) is full again: 5 at once pass
    await waitFor('1 s of Redis time', async () => (await redisMs()) >= last + 1_000, 10_000, 50);
    const refillStart = await redisMs();
    const refill = await Promise.all(
      Array.from({ length: 8 }, (_, i) => buy(i % 2 ? b.url : a.url, p, bot)),
    );
    const refillEnd = await redisMs();
    const refilled = refill.filter((r) => r.status === 202).length;
    expect(refilled).toBeGreaterThanOrEqual(5);
    expect(refilled).toBeLessThanOrEqual(5 + Math.floor((refillEnd - refillStart) / 200));
  });

  it('per client address: one address is cut at its limit, another is not', async () => {
    const p = newProduct();
    await seed(p, { total: 1_000 });
    const ip = newIp();
    const first = await redisMs();
    const crowd = await Promise.all(
      Array.from({ length: 40 }, (_, i) => buy(i % 2 ? a.url : b.url, p, newUser(), { ip })),
    );
    const last = await redisMs();
    const passed = crowd.filter((r) => r.status === 202).length;
    // a burst of 20, plus what refilled (1 per 50 ms) over the Redis time the 40 took
    expect(passed).toBeGreaterThanOrEqual(20);
    expect(passed).toBeLessThanOrEqual(20 + Math.floor((last - first) / 50));
    expect(passed).toBeLessThan(40); // (unless Redis saw the 40 over a second)
    const limited = crowd.find((r) => r.status === 429)!;
    expect(limited.headers.get('ratelimit')).toMatch(/^"ip";r=0;/);
    expect((await buy(a.url, p, newUser(), { ip: newIp() })).status).toBe(202);
  });

  it('a product sold out is answered from memory before any limiter', async () => {
    const p = newProduct();
    await seed(p, { total: 1, segments: 1 });
    expect((await buy(a.url, p, newUser())).status).toBe(202);
    // the process learns it is sold out
    expect(await typeOf(await buy(a.url, p, newUser()))).toBe('sold-out');
    const user = newUser();
    const answers = await Promise.all(Array.from({ length: 12 }, () => buy(a.url, p, user)));
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 409));
    expect(await a.rt.redis.exists(a.rt.keys.rateLimit('seckill', 'user', user))).toBe(0);
    const beside = a.rt.keys.shopperRateLimit('seckill', p, 0, user);
    expect(await a.rt.redis.exists(beside)).toBe(0);
  });

  it("a shopper's purchase bucket lives beside their home segment: one slot for their own keys", async () => {
    const p = newProduct();
    await seed(p, { total: 10, segments: 4 });
    const user = newUser();
    expect((await buy(a.url, p, user, { ip: newIp() })).status).toBe(202);
    const home = homeSegment(user, 4);
    const bucket = a.rt.keys.shopperRateLimit('seckill', p, home, user);
    expect(await a.rt.redis.exists(bucket)).toBe(1);
    expect(await a.rt.redis.exists(a.rt.keys.rateLimit('seckill', 'user', user))).toBe(0);
    expect(calculateSlot(bucket)).toBe(calculateSlot(a.rt.keys.segment(p, home).state));
  });

  it('keyed requests for a sold-out product: the guard answers, one read each, no record stored; a key that sold replays (issue 37, item 3)', async () => {
    const p = newProduct();
    await seed(p, { total: 2, segments: 1 });
    const keyed = (user: string, key: string, quantity = 1) =>
      fetch(`${a.url}/seckill`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-user-id': user,
          'x-forwarded-for': newIp(),
          'idempotency-key': key,
        },
        body: JSON.stringify({ productId: p, quantity }),
      });
    const early = newUser();
    expect((await keyed(early, 'k-early')).status).toBe(202);
    expect((await buy(a.url, p, newUser())).status).toBe(202);
    expect(await typeOf(await buy(a.url, p, newUser()))).toBe('sold-out');

    const bot = newUser();
    const count = countCommands(a.rt.redis);
    try {
      const answers = [];
      for (let i = 0; i < 40; i++) answers.push(await keyed(bot, `k-${i}`));
      expect(answers.map((r) => r.status)).toEqual(answers.map(() => 409));
      expect(await typeOf(answers[0]!)).toBe('sold-out');
      expect(answers.filter((r) => r.headers.get('idempotent-replayed') !== null)).toEqual([]);
      // one GET of the key's record each, nothing written (no record, no limiter bucket)
      expect(count.byName.get('get')).toBe(40);
      // no purchase script ran (a deduct, a key's claim, a bucket's take); background work on
      // the same connection (the product's active lease, renewed every 20 s) may run its own
      const scripts = [...count.bySha.keys()].map((sha) => scriptNameOf(sha) ?? sha);
      expect(scripts.filter((n) => !/^(active|room|outbox|lockRenew)/.test(n))).toEqual([]);
      expect(count.byName.get('set') ?? 0).toBe(0);
    } finally {
      count.stop();
    }
    const { all, refusals } = a.rt.keys.idempotency(p, 0, bot);
    expect(await a.rt.redis.exists(all, refusals)).toBe(0);
    expect(await a.rt.redis.exists(a.rt.keys.rateLimit('seckill', 'user', bot))).toBe(0);

    // a key whose purchase sold before the sell-out still answers that sale
    const replay = await keyed(early, 'k-early');
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await typeOf(await keyed(early, 'k-early', 2))).toBe('idempotency-key-reused');
  });

  it('the order routes have a per-shopper limit (RATE_LIMIT_ORDERS): 429 problem+json past it (issue 37, item 6)', async () => {
    const limited = await startApp(ns.config({ RATE_LIMIT_ORDERS: '3/m' }));
    try {
      const [user, other] = [newUser(), newUser()];
      const order = randomUUID();
      const ask = (who: string, path: string, method = 'GET') =>
        fetch(`${limited.url}${path}`, { method, headers: { 'x-user-id': who } });
      // reads, pay and cancel draw on one bucket of 3 a minute (an unknown order: 404)
      const answers = [];
      for (const [path, method] of [
        [`/orders/${order}`, 'GET'],
        [`/orders/${order}/pay`, 'POST'],
        [`/orders/${order}/cancel`, 'POST'],
        ...Array.from({ length: 7 }, () => [`/orders/${order}`, 'GET']),
      ] as const) {
        answers.push(await ask(user, path, method));
      }
      expect(answers.map((r) => r.status)).toEqual([
        404, 404, 404, 429, 429, 429, 429, 429, 429, 429,
      ]);
      const refusal = answers[3]!;
      expect(refusal.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await typeOf(refusal)).toBe('rate-limited');
      expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refusal.headers.get('ratelimit-policy')).toBe('"orders";q=3;w=60');
      expect((await ask(user, `/orders/${order}/pay`, 'POST')).status).toBe(429);
      // another shopper has a bucket of their own
      expect((await ask(other, `/orders/${order}`)).status).toBe(404);
    } finally {
      await limited.close();
    }
  });

  it('refuses a malformed limit at start-up, naming it', () => {
    for (const [name, value] of [
      ['RATE_LIMIT_USER', '5/h'],
      ['RATE_LIMIT_IP', '0/s'],
      ['RATE_LIMIT_USER_BURST', '0'],
    ] as const) {
      expect(() => loadConfig({ AUTH_MODE: 'dev', [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ AUTH_MODE: 'dev', [name]: value })).toThrow(new RegExp(name));
    }
  });
});

describe('sale tokens', () => {
  it('refuses a re-encoded token: padding, or unused bits set, on its signature or payload (issue 26 item 8)', async () => {
    const p = newProduct();
    await seed(p, { total: 10, requireSaleToken: true });
    const u = newUser();
    const { token } = (await (await tokenFor(p, u)).json()) as { token: string };
    const [payload, signature] = token.split('.') as [string, string];
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // 32 bytes in 43 characters: the last one carries 2 unused bits
    const last = ALPHABET.indexOf(signature.at(-1)!);
    const lowBits = `${signature.slice(0, -1)}${ALPHABET[last ^ 1]}`;
    expect(Buffer.from(lowBits, 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
    for (const t of [
      `${token}=`,
      `${token}==`,
      `${payload}=.${signature}`,
      `${payload}.${lowBits}`,
    ]) {
      const res = await buy(a.url, p, u, { token: t });
      expect(res.status, t).toBe(403);
      expect(await typeOf(res)).toBe('invalid-sale-token');
    }
    expect((await buy(a.url, p, u, { token })).status).toBe(202);
  });

  it('a purchase needs a token of this shopper, product and sale, not expired', async () => {
    const p = newProduct();
    const other = newProduct();
    const { epoch } = await seed(p, { total: 100, requireSaleToken: true });
    await seed(other, { total: 100, requireSaleToken: true });
    const [u, v] = [newUser(), newUser()];

    const none = await buy(a.url, p, u);
    expect(none.status).toBe(403);
    expect(await typeOf(none)).toBe('invalid-sale-token');

    const issued = await tokenFor(p, u);
    expect(issued.status).toBe(201);
    const { token } = (await issued.json()) as { token: string };
    const forged = `${token.split('.')[0]}.${Buffer.from('x'.repeat(32)).toString('base64url')}`;
    const selfMade = signSaleToken(
      { userId: u, productId: p, epoch, expiresAt: Date.now() + 60_000 },
      'not-the-secret-but-long-enough-0000000',
    );
    const otherProduct = ((await (await tokenFor(other, u)).json()) as { token: string }).token;
    for (const [t, user] of [
      [forged, u],
      [selfMade, u],
      [token, v], // another shopper's
      [otherProduct, u],
      ['not a token', u],
    ] as const) {
      const res = await buy(b.url, p, user, { token: t });
      expect(res.status).toBe(403);
    }
    // the right one, on either process
    expect((await buy(b.url, p, u, { token })).status).toBe(202);

    // a previous sale's token
    const vToken = ((await (await tokenFor(p, v)).json()) as { token: string }).token;
    const reseeded = await seed(p, { total: 100, requireSaleToken: true }, '?force=true');
    await waitFor(
      'the reseed notice to reach both processes',
      async () => {
        const views = await Promise.all([a, b].map((app) => app.rt.inventory.catalogue.get(p)));
        return views.every((view) => view?.epoch === reseeded.epoch);
      },
      10_000,
      20,
    );
    expect((await buy(a.url, p, v, { token: vToken })).status).toBe(403);
    // expired (SALE_TOKEN_TTL_S=2)
    const w = newUser();
    const wToken = ((await (await tokenFor(p, w)).json()) as { token: string }).token;
    // the scenario: the sale token expires
    await new Promise((r) => setTimeout(r, 2_100));
    const late = await buy(a.url, p, w, { token: wToken });
    expect(late.status).toBe(403);
    expect(((await late.json()) as { detail: string }).detail).toMatch(/expired/);
    // nothing refused was sold
    const r = (await (await fetch(`${a.url}/admin/products/${p}`, { headers: admin })).json()) as {
      remaining: number;
    };
    expect(r.remaining).toBe(100);
  });

  it('is issued from the lead time before the start, not earlier', async () => {
    const p = newProduct();
    const startsAt = Date.now() + 12_000; // SALE_TOKEN_LEAD_S=10
    await seed(p, {
      total: 10,
      requireSaleToken: true,
      startsAt: new Date(startsAt).toISOString(),
    });
    const u = newUser();
    const early = await tokenFor(p, u);
    expect(early.status).toBe(425);
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // the scenario: the sale-token window opens
    await new Promise((r) => setTimeout(r, Math.max(0, startsAt - 10_000 - Date.now()) + 200));
    const issued = await tokenFor(p, u);
    expect(issued.status).toBe(201);
    const body = (await issued.json()) as { token: string; expiresAt: string };
    // valid from the start on, for SALE_TOKEN_TTL_S
    expect(Date.parse(body.expiresAt)).toBe(startsAt + 2_000);
    // before the start the sale itself answers
    expect((await buy(a.url, p, u, { token: body.token })).status).toBe(425);
    expect((await tokenFor('nope-' + p, u)).status).toBe(404);
    expect((await tokenFor('bad id!', u)).status).toBe(400);
  });
});

describe('load shedding', () => {
  /** A raw socket that sends a request's headers and the start of its body, then stalls. */
  function slowBody(port: number, kind: 'chunked' | 'short', path: string) {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.setNoDelay(true);
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    socket.on('error', () => {});
    const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
    const length = kind === 'chunked' ? 'transfer-encoding: chunked' : 'content-length: 40';
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
        `x-user-id: ${newUser()}\r\n${length}\r\n\r\n` +
        (kind === 'chunked' ? '1\r\n{\r\n' : '{"produ'),
    );
    return { socket, closed };
  }

  it('an open dashboard stream holds no in-flight slot (MAX_INFLIGHT=2, three streams open: a purchase still sells)', async () => {
    const capped = await startApp(ns.config({ MAX_INFLIGHT: '2' }));
    const streams = [0, 1, 2].map(() => new AbortController());
    try {
      const p = newProduct();
      const seeded = await fetch(`${capped.url}/admin/products/${p}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ strategy: 'lockfree', segments: 1, total: 5 }),
      });
      expect(seeded.status).toBe(201);
      for (const c of streams) {
        const res = await fetch(`${capped.url}/admin/dashboard/stream`, {
          headers: { authorization: admin.authorization },
          signal: c.signal,
        });
        expect(res.status).toBe(200);
        await res.body!.getReader().read(); // the stream is open and has started
      }
      const bought = await fetch(`${capped.url}/seckill`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-id': newUser() },
        body: JSON.stringify({ productId: p }),
      });
      expect(bought.status).toBe(202);
      expect((await fetch(`${capped.url}/products/${p}`)).status).toBe(200);
    } finally {
      for (const c of streams) c.abort();
      await capped.close();
    }
  });

  /** What a raw socket gets back for `bytes` before the server closes it. */
  function rawAnswer(port: number, bytes: string): Promise<string> {
    const socket = connect({ port, host: '127.0.0.1' });
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    socket.on('error', () => {});
    socket.write(bytes);
    return new Promise((resolve) => socket.once('close', () => resolve(received)));
  }

  it('what node refuses before any handler (a broken request line, oversized headers) is answered as problem+json', async () => {
    const port = Number(new URL(a.url).port);
    const cases = [
      { bytes: 'GARBAGE\r\n\r\n', status: 'HTTP/1.1 400 Bad Request', code: 'malformed-request' },
      {
        bytes: `GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
        status: 'HTTP/1.1 431 Request Header Fields Too Large',
        code: 'headers-too-large',
      },
    ];
    for (const c of cases) {
      const answer = await rawAnswer(port, c.bytes);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head!.split('\r\n')[0]).toBe(c.status);
      expect(head).toContain('\r\nContent-Type: application/problem+json\r\n');
      expect(JSON.parse(body!)).toMatchObject({ type: `urn:seckill:problem:${c.code}` });
    }
  });

  it('a request timed out on a connection that answered before gets its 408 too: after 100 Continue, keep-alive, pipelined (issue 46)', async () => {
    const slow = await startApp(ns.config({ HTTP_REQUEST_TIMEOUT_MS: '1000' }));
    const port = Number(new URL(slow.url).port);
    const probe = 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n';
    try {
      const cases = {
        // the 100 Continue, then a body that never comes
        'expect 100-continue': [
          'POST /seckill HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n' +
            'content-length: 30\r\nexpect: 100-continue\r\nx-user-id: u1\r\n\r\n',
        ],
        // one request answered, then a second whose headers never end
        'keep-alive': [probe, 'GET /healthz HTTP/1.1\r\nhost: x\r\n'],
        pipelined: [`${probe}GET /healthz HTTP/1.1\r\nhost: x\r\n`],
      };
      const answers = await Promise.all(
        Object.values(cases).map((writes) => {
          const socket = connect({ port, host: '127.0.0.1' });
          let received = '';
          socket.on('error', () => {});
          socket.on('data', (d) => {
            received += d.toString();
            // the keep-alive case's second request goes once the first is answered
            if (writes.length > 1 && received.includes('"ok"')) socket.write(writes.splice(1)[0]!);
          });
          socket.write(writes[0]!);
          return new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
        }),
      );
      const names = Object.keys(cases);
      answers.forEach((answer, i) => {
        const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
        expect(statuses, names[i]).toEqual(i === 0 ? ['100', '408'] : ['200', '408']);
        const last = answer.slice(answer.lastIndexOf('HTTP/1.1 408'));
        expect(last, names[i]).toContain('\r\nContent-Type: application/problem+json\r\n');
        expect(JSON.parse(last.split('\r\n\r\n')[1]!)).toMatchObject({
          type: 'urn:seckill:problem:request-timeout',
          status: 408,
        });
      });
    } finally {
      await slow.close();
    }
  });

  for (const fast of [true, false]) {
    it(`slow bodies hold no in-flight slot, are closed with 408 after HTTP_REQUEST_TIMEOUT_MS, and one address may hold only so many (FAST_PATH=${fast}; issue 37, item 2)`, async () => {
      const capped = await startApp(
        ns.config({
          FAST_PATH: String(fast),
          MAX_INFLIGHT: '5',
          HTTP_REQUEST_TIMEOUT_MS: '2000',
          MAX_UNREAD_BODIES_PER_ADDRESS: '10',
        }),
      );
      const port = Number(new URL(capped.url).port);
      try {
        const p = newProduct();
        const seeded = await fetch(`${capped.url}/admin/products/${p}`, {
          method: 'PUT',
          headers: admin,
          body: JSON.stringify({ strategy: 'lockfree', segments: 1, total: 5 }),
        });
        expect(seeded.status).toBe(201);
        // more slow bodies than MAX_INFLIGHT: chunked to a path that does not exist and to the
        // sale, a Content-Length body cut short to the sale
        const slow = [
          ...[0, 1, 2].map(() => slowBody(port, 'chunked', '/nowhere')),
          ...[0, 1].map(() => slowBody(port, 'chunked', '/seckill')),
          ...[0, 1, 2].map(() => slowBody(port, 'short', '/seckill')),
        ];
        await waitFor(
          'the slow bodies sent',
          async () => slow.every(({ socket }) => !socket.connecting && socket.writableLength === 0),
          10_000,
          20,
        );
        // a purchase still gets through, and the probes answer
        const bought = await fetch(`${capped.url}/seckill`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user-id': newUser() },
          body: JSON.stringify({ productId: p }),
        });
        expect(bought.status).toBe(202);
        expect((await fetch(`${capped.url}/healthz`)).status).toBe(200);
        // the address's bound (10): two more are held; the third ends the address's oldest slow
        // body at once (408), not itself
        const more = [0, 1, 2].map(() => slowBody(port, 'chunked', '/nowhere'));
        const evicted = await slow[0]!.closed;
        expect(evicted.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
        expect(evicted).toContain('MAX_UNREAD_BODIES_PER_ADDRESS');
        // at the bound, a purchase whose body comes with its headers is still served
        const atBound = await fetch(`${capped.url}/seckill`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user-id': newUser() },
          body: JSON.stringify({ productId: p }),
        });
        expect(atBound.status).toBe(202);
        // HTTP_REQUEST_TIMEOUT_MS (2 s, checked every second) ends every slow body with a 408
        const ends = await Promise.all([...slow.slice(2), ...more].map((s) => s.closed));
        expect(ends.map((e) => e.split('\r\n')[0])).toEqual(
          ends.map(() => 'HTTP/1.1 408 Request Timeout'),
        );
        // as problem+json, as every other refusal of bad input
        for (const e of ends) expect(e).toContain('\r\nContent-Type: application/problem+json\r\n');
        expect(JSON.parse(ends[0]!.split('\r\n\r\n')[1]!)).toMatchObject({
          type: 'urn:seckill:problem:request-timeout',
          status: 408,
        });
        // nothing was sold for them: two units sold of five
        expect((await capped.rt.products.state(p))!.remaining).toBe(3);
      } finally {
        await capped.close();
      }
    });
  }
});
