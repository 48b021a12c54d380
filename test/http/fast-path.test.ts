/**
 * The fast path in front of Express (src/http/fast-path.ts) answers exactly as Express does: the
 * same requests go to a process with it (FAST_PATH=true) and one without, and status, headers and
 * body must match (request ids and order ids aside, which differ by construction). The requests it
 * is meant to answer itself are shown not to reach Express there (a probe on Express's entry point):
 * purchases in stock and sold out, keyed and replayed, refused for their body or identity, in dev
 * mode and in jwt mode with rate limits and sale tokens.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signJwt } from '../../src/http/auth.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
let fast: RunningApp;
let slow: RunningApp;
/** the same pair in jwt mode, with a per-shopper rate limit and sale tokens */
let fastJwt: RunningApp;
let slowJwt: RunningApp;
const JWT_SECRET = 'a-jwt-secret-for-the-fast-path-test-0123456789';
const TOKEN_SECRET = 'a-sale-token-secret-for-the-fast-path-test-012345';
/** request ids Express saw (every app made from here on reports to it) */
const reachedExpress = new Set<string>();

beforeAll(async () => {
  const app = express.application as unknown as {
    handle(req: { headers: Record<string, unknown> }, ...rest: unknown[]): unknown;
  };
  const handle = app.handle;
  app.handle = function (req, ...rest) {
    reachedExpress.add(String(req.headers['x-request-id']));
    return handle.call(this, req, ...rest);
  };
  fast = await startApp(ns.config({ FAST_PATH: 'true' }));
  slow = await startApp(ns.config({ FAST_PATH: 'false' }));
  const jwt = {
    AUTH_MODE: 'jwt',
    JWT_SECRET,
    RATE_LIMIT_USER: '2/m',
    SALE_TOKEN_SECRET: TOKEN_SECRET,
  };
  fastJwt = await startApp(ns.config({ ...jwt, FAST_PATH: 'true' }));
  slowJwt = await startApp(ns.config({ ...jwt, FAST_PATH: 'false' }));
});
afterAll(async () => {
  for (const app of [fast, slow, fastJwt, slowJwt]) await app?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const COMPARED = [
  'content-type',
  'content-length',
  'retry-after',
  'ratelimit',
  'ratelimit-policy',
  'location',
  'idempotent-replayed',
  'www-authenticate',
];
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

interface Seen {
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

/** One request; ids of this request and of orders replaced, so two answers can be compared. */
async function send(
  app: RunningApp,
  id: string,
  o: { method?: string; path?: string; headers?: Record<string, string>; body?: string },
): Promise<Seen> {
  const res = await fetch(`${app.url}${o.path ?? '/seckill'}`, {
    method: o.method ?? 'POST',
    headers: { 'x-request-id': id, ...o.headers },
    ...(o.body !== undefined && { body: o.body }),
  });
  const body = (await res.text()).replaceAll(id, '<request-id>').replace(UUID, '<uuid>');
  const headers = Object.fromEntries(
    COMPARED.map((h) => [h, res.headers.get(h)?.replace(UUID, '<uuid>') ?? null]),
  );
  expect(res.headers.get('x-request-id')).toBe(id);
  return { status: res.status, headers, body };
}

let n = 0;
/**
 * The same request to both processes: the answers, and whether each reached Express. A "*" in a
 * header's value (the shopper's id) is that side's letter, so each side has a buyer of its own: one
 * side's purchase must not limit the other's. A header value "jwt:<sub>" is sent as a bearer JWT
 * signed for <sub> ("*" in it as above).
 */
async function both(o: Parameters<typeof send>[2], pair = () => [fast, slow] as const) {
  const i = String(n++).padStart(3, '0');
  const side = (x: string) => ({
    ...o,
    headers: Object.fromEntries(
      Object.entries(o.headers ?? {}).map(([k, v]) => [
        k,
        v.startsWith('jwt:') ? bearerOf(v.slice(4).replace('*', x)) : v.replace('*', x),
      ]),
    ),
  });
  const [withFast, withoutFast] = pair();
  const [f, s] = [
    await send(withFast, `fp-f-${i}`, side('f')),
    await send(withoutFast, `fp-s-${i}`, side('s')),
  ];
  return {
    fast: f,
    slow: s,
    fastReachedExpress: reachedExpress.has(`fp-f-${i}`),
    slowReachedExpress: reachedExpress.has(`fp-s-${i}`),
  };
}

/** A bearer JWT for `sub` (jwt mode). */
const bearerOf = (sub: string) =>
  `Bearer ${signJwt({ sub, exp: Math.floor(Date.now() / 1_000) + 600 }, JWT_SECRET)}`;

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/**
 * Seeds `soldOut` (1 unit, bought here) and `onSale` (1 000 units) through the first app, and waits
 * until every app answers `soldOut` from memory (the deduct that finds it empty tells the others).
 */
async function seedSoldOutAndOnSale(apps: RunningApp[], soldOut: string, onSale: string) {
  for (const [p, total] of [
    [soldOut, 1],
    [onSale, 1_000],
  ] as const) {
    const res = await fetch(`${apps[0]!.url}/admin/products/${p}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ total, strategy: 'lockfree', segments: 1, limitPerUser: 5 }),
    });
    expect(res.status).toBe(201);
  }
  const last = await fetch(`${apps[0]!.url}/seckill`, {
    method: 'POST',
    ...json({ productId: soldOut }, { 'x-user-id': `last-${soldOut}` }),
  });
  expect(last.status).toBe(202);
  for (const app of apps) {
    await waitFor(
      'the process to know the product is sold out',
      async () => {
        await fetch(`${app.url}/seckill`, {
          method: 'POST',
          ...json(
            { productId: soldOut },
            { 'x-user-id': `learn-${randomBytes(2).toString('hex')}` },
          ),
        });
        return app.rt.inventory.sale.refusalFromMemory(soldOut) !== undefined;
      },
      15_000,
    );
  }
}

describe('the fast path answers as Express does', () => {
  const soldOut = `fp${randomBytes(3).toString('hex')}`;
  const onSale = `fp${randomBytes(3).toString('hex')}`;

  beforeAll(() => seedSoldOutAndOnSale([fast, slow], soldOut, onSale));

  const key = (k: string) => ({ 'idempotency-key': `${k}-${randomBytes(3).toString('hex')}` });
  const keyOnSale = key('fp-key-on-sale');
  const fastCases: Array<[string, Parameters<typeof send>[2]]> = [
    ['a purchase of a sold-out product', json({ productId: soldOut }, { 'x-user-id': 'fp-a' })],
    ['the same without an identity', json({ productId: soldOut })],
    ['with a quantity', json({ productId: soldOut, quantity: 3 }, { 'x-user-id': 'fp-b' })],
    [
      'with charset=utf-8',
      {
        headers: { 'content-type': 'application/json; charset=utf-8', 'x-user-id': 'fp-c' },
        body: JSON.stringify({ productId: soldOut }),
      },
    ],
    ['GET /healthz', { method: 'GET', path: '/healthz' }],
    ['GET /readyz', { method: 'GET', path: '/readyz' }],
    ['a product on sale', json({ productId: onSale }, { 'x-user-id': 'fp-d*' })],
    [
      'a product on sale, 2 units',
      json({ productId: onSale, quantity: 2 }, { 'x-user-id': 'fp-d2*' }),
    ],
    [
      'over the per-user limit',
      json({ productId: onSale, quantity: 9 }, { 'x-user-id': 'fp-d3*' }),
    ],
    ['a keyed purchase', json({ productId: onSale }, { 'x-user-id': 'fp-o*', ...keyOnSale })],
    [
      'the same key again (a replay)',
      json({ productId: onSale }, { 'x-user-id': 'fp-o*', ...keyOnSale }),
    ],
    [
      'the same key with another body',
      json({ productId: onSale, quantity: 2 }, { 'x-user-id': 'fp-o*', ...keyOnSale }),
    ],
    [
      'a keyed purchase of a sold-out product',
      json({ productId: soldOut }, { 'x-user-id': 'fp-e*', ...key('fp-key-sold') }),
    ],
    [
      'an Idempotency-Key that is not visible ASCII',
      json({ productId: onSale }, { 'x-user-id': 'fp-p*', 'idempotency-key': 'a b' }),
    ],
    ['a body naming the buyer', json({ productId: soldOut, userId: 'fp-f' })],
    ['a body naming a buyer on sale', json({ productId: onSale, userId: 'fp-q*' })],
    ['no identity, on sale', json({ productId: onSale })],
    ['a bad X-User-Id', json({ productId: onSale }, { 'x-user-id': 'bad user!' })],
    ['an invalid product id', json({ productId: 'bad id!' }, { 'x-user-id': 'fp-i' })],
    ['an unknown field', json({ productId: soldOut, extra: 1 }, { 'x-user-id': 'fp-j' })],
    ['quantity 0', json({ productId: onSale, quantity: 0 }, { 'x-user-id': 'fp-r' })],
    ['an unknown product', json({ productId: 'fp-no-such' }, { 'x-user-id': 'fp-k' })],
    // bodies at the edge of the hand-written check in front of the schema (seckill.ts)
    ['quantity 1.5', json({ productId: soldOut, quantity: 1.5 }, { 'x-user-id': 'fp-u' })],
    ['quantity as a string', json({ productId: soldOut, quantity: '1' }, { 'x-user-id': 'fp-u' })],
    [
      'quantity 1000, sold out',
      json({ productId: soldOut, quantity: 1000 }, { 'x-user-id': 'fp-u' }),
    ],
    ['quantity 1001', json({ productId: soldOut, quantity: 1001 }, { 'x-user-id': 'fp-u' })],
    ['a productId that is a number', json({ productId: 5 }, { 'x-user-id': 'fp-u' })],
    ['an empty object', json({}, { 'x-user-id': 'fp-u' })],
    ['a userId that is not an id', json({ productId: soldOut, userId: 'bad user!' })],
    [
      'a "__proto__" key',
      {
        headers: { 'content-type': 'application/json', 'x-user-id': 'fp-u' },
        body: `{"productId":"${soldOut}","__proto__":{"quantity":2}}`,
      },
    ],
  ];
  for (const [what, req] of fastCases) {
    it(`${what}: answered ahead of Express, as Express answers it`, async () => {
      const r = await both(req);
      expect(r.fast).toEqual(r.slow);
      expect(r.fastReachedExpress).toBe(false);
      expect(r.slowReachedExpress).toBe(true);
    });
  }

  const expressCases: Array<[string, Parameters<typeof send>[2]]> = [
    [
      'malformed JSON',
      {
        headers: { 'content-type': 'application/json', 'x-user-id': 'fp-g' },
        body: '{"productId":',
      },
    ],
    [
      'a JSON array',
      { headers: { 'content-type': 'application/json', 'x-user-id': 'fp-h' }, body: '[1]' },
    ],
    [
      'a JSON string',
      { headers: { 'content-type': 'application/json', 'x-user-id': 'fp-h' }, body: '"x"' },
    ],
    [
      'text/plain',
      { headers: { 'content-type': 'text/plain', 'x-user-id': 'fp-l' }, body: 'hello' },
    ],
    [
      'a body over the limit',
      json({ productId: soldOut, pad: 'x'.repeat(40_000) }, { 'x-user-id': 'fp-m' }),
    ],
    ['no body', { headers: { 'x-user-id': 'fp-n' } }],
    ['GET /healthz?x=1', { method: 'GET', path: '/healthz?x=1' }],
    [
      'POST /seckill/ (a trailing slash)',
      { ...json({ productId: onSale }, { 'x-user-id': 'fp-s*' }), path: '/seckill/' },
    ],
  ];
  for (const [what, req] of expressCases) {
    it(`${what}: Express's answer on both`, async () => {
      const r = await both(req);
      expect(r.fast).toEqual(r.slow);
      expect(r.slowReachedExpress).toBe(true);
    });
  }

  it('sells exactly what both sides bought: 5 units a side, and the replay sold nothing', async () => {
    // per side: "a product on sale" (1), "2 units" (2), the keyed purchase (1, replayed once),
    // "a body naming a buyer on sale" (1): 5 units a side, 10 in all
    const res = await fetch(`${fast.url}/products/${onSale}`);
    expect(((await res.json()) as { remaining: number }).remaining).toBe(1_000 - 10);
  });

  it('sends the headers in the same order on both paths', async () => {
    const names = (app: RunningApp, path: string, body?: string) =>
      new Promise<string[]>((resolve, reject) => {
        const req = request(`${app.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: {
            'x-user-id': `fp-order-${randomBytes(3).toString('hex')}`,
            ...(body !== undefined && { 'content-type': 'application/json' }),
          },
        });
        req.once('response', (res) => {
          res.resume();
          // the names as sent, in order (raw headers alternate name and value)
          resolve(res.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()));
        });
        req.once('error', reject);
        req.end(body);
      });
    for (const [path, body] of [
      ['/healthz', undefined],
      ['/readyz', undefined],
      ['/seckill', JSON.stringify({ productId: onSale })],
      ['/seckill', JSON.stringify({ productId: soldOut })],
      ['/seckill', JSON.stringify({ productId: 'bad id!' })],
    ] as const) {
      const [f, s] = [await names(fast, path, body), await names(slow, path, body)];
      expect(f, `${path} ${body ?? ''}`).toEqual(s);
    }
  });

  it('counts what it answers as Express counts it (/metrics)', async () => {
    const count = async (app: RunningApp) => {
      const text = await (await fetch(`${app.url}/metrics`)).text();
      const line = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
      return {
        refused: line(
          /^http_requests_total\{method="POST",route="\/seckill",status="409"\} (\d+)/m,
        ),
        soldOut: line(/^http_problems_total\{route="\/seckill",code="sold-out"\} (\d+)/m),
      };
    };
    const before = await Promise.all([count(fast), count(slow)]);
    for (let i = 0; i < 5; i++)
      await both(json({ productId: soldOut }, { 'x-user-id': `fp-z${i}` }));
    const after = await Promise.all([count(fast), count(slow)]);
    for (const k of [0, 1]) {
      expect(after[k]!.refused - before[k]!.refused).toBe(5);
      expect(after[k]!.soldOut - before[k]!.soldOut).toBe(5);
    }
  });
});

describe('the fast path answers as Express does, in jwt mode with a rate limit and sale tokens', () => {
  const onSale = `fpj${randomBytes(3).toString('hex')}`;
  const gated = `fpt${randomBytes(3).toString('hex')}`;
  const jwtPair = () => [fastJwt, slowJwt] as const;

  beforeAll(async () => {
    for (const [p, extra] of [
      [onSale, {}],
      [gated, { requireSaleToken: true }],
    ] as const) {
      const res = await fetch(`${fastJwt.url}/admin/products/${p}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ total: 100, strategy: 'lockfree', segments: 2, ...extra }),
      });
      expect(res.status, await res.clone().text()).toBe(201);
    }
  });

  const cases: Array<[string, () => Parameters<typeof send>[2]]> = [
    ['no bearer token', () => json({ productId: onSale })],
    [
      'a bearer that is not a JWT',
      () => json({ productId: onSale }, { authorization: 'Bearer x' }),
    ],
    [
      'a JWT signed with another secret',
      () =>
        json(
          { productId: onSale },
          {
            authorization: `Bearer ${signJwt({ sub: 'fpj-x', exp: 9_999_999_999 }, 'w'.repeat(40))}`,
          },
        ),
    ],
    [
      'a userId in the body',
      () => json({ productId: onSale, userId: 'fpj-y' }, { authorization: 'jwt:fpj-y*' }),
    ],
    [
      'a first purchase (RateLimit headers)',
      () => json({ productId: onSale }, { authorization: 'jwt:fpj-a*' }),
    ],
    ['a second one', () => json({ productId: onSale }, { authorization: 'jwt:fpj-a*' })],
    [
      'a third: over the rate limit',
      () => json({ productId: onSale }, { authorization: 'jwt:fpj-a*' }),
    ],
    [
      'a gated product without a sale token',
      () => json({ productId: gated }, { authorization: 'jwt:fpj-b*' }),
    ],
    [
      'a gated product with a bad sale token',
      () => json({ productId: gated }, { authorization: 'jwt:fpj-c*', 'sale-token': 'nope' }),
    ],
  ];
  for (const [what, req] of cases) {
    it(`${what}: answered ahead of Express, as Express answers it`, async () => {
      const r = await both(req(), jwtPair);
      expect(r.fast).toEqual(r.slow);
      expect(r.fastReachedExpress).toBe(false);
    });
  }

  it('keyed purchases of an ended product skip the rate limit, as a sold-out one does', async () => {
    const ended = `fpe${randomBytes(3).toString('hex')}`;
    const seeded = await fetch(`${fastJwt.url}/admin/products/${ended}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({
        total: 5,
        strategy: 'lockfree',
        segments: 1,
        endsAt: new Date(Date.now() - 60_000).toISOString(),
      }),
    });
    expect(seeded.status).toBe(201);
    for (const [app, x] of [
      [fastJwt, 'f'],
      [slowJwt, 's'],
    ] as const) {
      const authorization = bearerOf(`fpj-end${x}`);
      const statuses = [];
      // RATE_LIMIT_USER is 2/m: a third request through the limiter would be 429
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${app.url}/seckill`, {
          method: 'POST',
          ...json({ productId: ended }, { authorization, 'idempotency-key': `end-${x}-${i}` }),
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([410, 410, 410, 410]);
    }
  });

  it('a gated product with a sale token: the same 202 on both', async () => {
    // a token names its shopper, so each side gets its own from POST /products/:id/sale-token
    const seen = [];
    for (const [app, x] of [
      [fastJwt, 'f'],
      [slowJwt, 's'],
    ] as const) {
      const authorization = bearerOf(`fpj-d${x}`);
      const issued = await fetch(`${app.url}/products/${gated}/sale-token`, {
        method: 'POST',
        headers: { authorization },
      });
      expect(issued.status, await issued.clone().text()).toBe(201);
      const { token } = (await issued.json()) as { token: string };
      const id = `fp-t${x}-${n++}`;
      seen.push(
        await send(app, id, json({ productId: gated }, { authorization, 'sale-token': token })),
      );
      expect(reachedExpress.has(id)).toBe(x === 's');
    }
    expect(seen[0]!.status).toBe(202);
    expect(seen[0]).toEqual(seen[1]);
  });
});

describe('pipelined purchases at the in-flight cap (MAX_INFLIGHT=2)', () => {
  let fastCap: RunningApp;
  let slowCap: RunningApp;
  const soldOut = `fq${randomBytes(3).toString('hex')}`;
  const onSale = `fq${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    fastCap = await startApp(ns.config({ FAST_PATH: 'true', MAX_INFLIGHT: '2' }));
    slowCap = await startApp(ns.config({ FAST_PATH: 'false', MAX_INFLIGHT: '2' }));
    await seedSoldOutAndOnSale([fastCap, slowCap], soldOut, onSale);
  });
  afterAll(async () => {
    for (const app of [fastCap, slowCap]) await app?.close();
  });

  /** The statuses of purchases sent in one write on one connection, in order. */
  async function pipelined(app: RunningApp, bodies: unknown[], user: string): Promise<number[]> {
    const { port } = new URL(app.url);
    const wire = bodies
      .map((b, i) => {
        const body = JSON.stringify(b);
        const close = i === bodies.length - 1 ? 'Connection: close\r\n' : '';
        return (
          `POST /seckill HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `X-User-Id: ${user}\r\n${close}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
        );
      })
      .join('');
    const got = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(wire));
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
      socket.on('error', reject);
    });
    return [...got.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  }

  it('a refusal answered from memory counts in flight as Express counts it: the same answers', async () => {
    const bodies = [
      { productId: onSale },
      { productId: soldOut },
      { productId: soldOut },
      { productId: onSale, quantity: 2 },
      { productId: soldOut },
    ];
    const f = await pipelined(fastCap, bodies, `fq-f-${randomBytes(2).toString('hex')}`);
    const s = await pipelined(slowCap, bodies, `fq-s-${randomBytes(2).toString('hex')}`);
    expect(f).toHaveLength(5);
    expect(f).toEqual(s);
    // the first purchase waits for Redis with the sold-out answer behind it: the cap is reached
    expect(f.slice(0, 2)).toEqual([202, 409]);
    expect(f).toContain(503);
  });
});

describe('a process that never saw the product answers as one that did', () => {
  const soldOut = `fn${randomBytes(3).toString('hex')}`;
  const ended = `fn${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    for (const [p, extra] of [
      [soldOut, {}],
      [ended, { endsAt: new Date(Date.now() - 10_000).toISOString() }],
    ] as const) {
      const res = await fetch(`${fast.url}/admin/products/${p}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ total: 1, strategy: 'segmented', segments: 1, ...extra }),
      });
      expect(res.status).toBe(201);
    }
    const last = await fetch(`${fast.url}/seckill`, {
      method: 'POST',
      ...json({ productId: soldOut }, { 'x-user-id': 'fn-last' }),
    });
    expect(last.status).toBe(202);
    await waitFor(
      'the product marked sold out in Redis',
      async () => {
        const res = await fetch(`${fast.url}/products/${soldOut}`);
        return ((await res.json()) as { status: string }).status === 'sold out';
      },
      15_000,
    );
  });

  for (const fastPath of ['true', 'false']) {
    it(`its first purchase without an identity is refused as sold out or ended, not 401 (FAST_PATH=${fastPath})`, async () => {
      // a new process: it has no view of either product until this request
      const app = await startApp(ns.config({ FAST_PATH: fastPath }));
      try {
        const seen = [];
        for (const p of [soldOut, ended]) {
          const res = await fetch(`${app.url}/seckill`, {
            method: 'POST',
            ...json({ productId: p }),
          });
          const { type } = (await res.json()) as { type: string };
          seen.push([res.status, type.slice(type.lastIndexOf(':') + 1)]);
        }
        expect(seen).toEqual([
          [409, 'sold-out'],
          [410, 'ended'],
        ]);
      } finally {
        await app.close();
      }
    });
  }
});
