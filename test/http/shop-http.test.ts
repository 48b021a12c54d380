import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signJwt } from '../../src/http/auth.js';
import { Keys } from '../../src/redis/keys.js';
import { startApp, type RunningApp } from '../support/app.js';
import { barrier } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
const SECRET = 'a-test-jwt-secret-that-is-long-enough';
let app: RunningApp;
let jwtApp: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ BODY_LIMIT_BYTES: '1024' }));
  jwtApp = await startApp(ns.config({ AUTH_MODE: 'jwt', JWT_SECRET: SECRET }));
});
afterAll(async () => {
  await app.close();
  await jwtApp.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const nowS = () => Math.floor(Date.now() / 1000);

async function seed(productId: string, body: Record<string, unknown>, query = '') {
  return fetch(`${app.url}/admin/products/${productId}${query}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify(body),
  });
}

function buy(
  body: unknown,
  o: { user?: string; headers?: Record<string, string>; raw?: string; base?: string } = {},
) {
  return fetch(`${o.base ?? app.url}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(o.user !== undefined && { 'x-user-id': o.user }),
      ...o.headers,
    },
    body: o.raw ?? JSON.stringify(body),
  });
}

async function problem(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as Record<string, unknown>;
  expect(body.status).toBe(res.status);
  return body;
}

/** Stock left and outbox entries, straight from Redis. */
async function redisFacts(productId: string, segments: number) {
  const r = app.rt.redis;
  let stock = 0;
  let outbox = 0;
  for (let i = 0; i < segments; i++) {
    const k = keys.segment(productId, i);
    stock += Number(await r.hget(k.state, STATE_FIELD.stock));
    outbox += await r.xlen(k.outbox);
  }
  return { stock, outbox };
}

describe('admin seeding', () => {
  it('refuses a missing or wrong token with 401 / 403 and changes nothing', async () => {
    const productId = newProduct();
    const none = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ total: 5, strategy: 'lockfree' }),
    });
    expect(none.status).toBe(401);
    await problem(none);
    const wrong = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { ...admin, authorization: 'Bearer not-the-admin-token' },
      body: JSON.stringify({ total: 5, strategy: 'lockfree' }),
    });
    expect(wrong.status).toBe(403);
    await problem(wrong);
    expect(await app.rt.redis.exists(keys.product(productId).meta)).toBe(0);
  });

  it('refuses a sale that needs sale tokens when this deployment issues none (422), seeding nothing', async () => {
    const productId = newProduct();
    const res = await seed(productId, { total: 5, strategy: 'lockfree', requireSaleToken: true });
    expect(res.status).toBe(422);
    const body = await problem(res);
    expect(body.type).toBe('urn:seckill:problem:sale-tokens-not-configured');
    expect(body.detail).toMatch(/SALE_TOKEN_SECRET is not set/);
    expect(await app.rt.redis.exists(keys.product(productId).meta)).toBe(0);
  });

  it('the sale-token route on a sale that needs none says so, not "this sale needs sale tokens"', async () => {
    const productId = newProduct();
    expect((await seed(productId, { total: 5, strategy: 'lockfree' })).status).toBe(201);
    const res = await fetch(`${app.url}/products/${productId}/sale-token`, {
      method: 'POST',
      headers: { 'x-user-id': 'tok-user' },
    });
    // a 4xx: the client asked for what the sale does not use (a 503 says "retry")
    expect(res.status).toBe(409);
    const body = await problem(res);
    expect(body.type).toBe('urn:seckill:problem:no-sale-token-needed');
    expect(body.detail).toBe(
      `the sale of ${productId} needs no sale token: POST /seckill without one ` +
        '(this deployment issues none: SALE_TOKEN_SECRET is not set)',
    );
  });

  it('splits total over the segments, remainder first, and shows each segment', async () => {
    const productId = newProduct();
    const res = await seed(productId, { total: 10, segments: 4, strategy: 'segmented' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ productId, epoch: 1, segments: [3, 3, 2, 2], carried: 0 });
    const view = (await (
      await fetch(`${app.url}/admin/products/${productId}`, { headers: admin })
    ).json()) as { segments: Array<{ stock: number }>; status: string; remaining: number };
    expect(view.segments.map((s) => s.stock)).toEqual([3, 3, 2, 2]);
    expect(view.status).toBe('live');
    const pub = await (await fetch(`${app.url}/products/${productId}`)).json();
    expect(pub).toMatchObject({ productId, status: 'live', remaining: 10, total: 10 });
  });

  it('refuses a reseed while live unless ?force=true', async () => {
    const productId = newProduct();
    await seed(productId, { total: 3, strategy: 'lockfree', segments: 2 });
    const refused = await seed(productId, { total: 5, strategy: 'lockfree', segments: 2 });
    expect(refused.status).toBe(409);
    expect((await problem(refused)).type).toBe('urn:seckill:problem:sale-live');
    expect((await redisFacts(productId, 2)).stock).toBe(3);
    const forced = await seed(
      productId,
      { total: 5, strategy: 'lockfree', segments: 2 },
      '?force=true',
    );
    expect(forced.status).toBe(200);
    expect((await redisFacts(productId, 2)).stock).toBe(5);
  });

  it.each([
    ['no total', { strategy: 'lockfree' }],
    ['negative total', { total: -1, strategy: 'lockfree' }],
    ['0 segments', { total: 5, segments: 0, strategy: 'lockfree' }],
    ['1025 segments', { total: 5, segments: 1025, strategy: 'lockfree' }],
    ['global with 4 segments', { total: 5, segments: 4, strategy: 'global' }],
    ['unknown strategy', { total: 5, strategy: 'yolo' }],
    [
      'ends before it starts',
      {
        total: 5,
        strategy: 'lockfree',
        startsAt: '2030-01-02T00:00:00Z',
        endsAt: '2030-01-01T00:00:00Z',
      },
    ],
    ['extra field', { total: 5, strategy: 'lockfree', colour: 'red' }],
  ])('answers a seed with %s with 400 and seeds nothing', async (_, body) => {
    const productId = newProduct();
    const res = await seed(productId, body);
    expect(res.status).toBe(400);
    await problem(res);
    expect(await app.rt.redis.exists(keys.product(productId).meta)).toBe(0);
  });
});

describe('POST /seckill', () => {
  it('accepts a purchase with 202 and a pending order', async () => {
    const productId = newProduct();
    await seed(productId, { total: 3, strategy: 'segmented', segments: 2 });
    const res = await buy({ productId }, { user: 'alice' });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { orderId: string; status: string };
    expect(body.status).toBe('pending');
    expect(body.orderId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('location')).toBe(`/orders/${body.orderId}`);
    expect(await redisFacts(productId, 2)).toEqual({ stock: 2, outbox: 1 });
  });

  it('50 parallel requests from one user sell exactly limitPerUser; others past the stock get 409 sold out', async () => {
    const productId = newProduct();
    await seed(productId, { total: 6, strategy: 'segmented', segments: 4, limitPerUser: 3 });
    const ready = barrier(50);
    const statuses = await Promise.all(
      Array.from({ length: 50 }, async () => {
        await ready();
        const res = await buy({ productId }, { user: 'greedy' });
        const b = (await res.json()) as { type?: string };
        return res.status === 202 ? 'accepted' : String(b.type);
      }),
    );
    expect(statuses.filter((s) => s === 'accepted').length).toBe(3);
    expect(
      statuses.filter(
        (s) =>
          s === 'accepted' ||
          s.endsWith('limit-reached') ||
          s.endsWith('purchase-in-progress') ||
          s.endsWith('lock-timeout'),
      ).length,
    ).toBe(50);
    const others = await Promise.all(
      Array.from({ length: 10 }, (_, i) => buy({ productId }, { user: `o${i}` })),
    );
    expect(others.filter((r) => r.status === 202).length).toBe(3);
    const late = others.filter((r) => r.status === 409);
    expect(late.length).toBe(7);
    for (const r of late) expect((await problem(r)).type).toBe('urn:seckill:problem:sold-out');
    expect(await redisFacts(productId, 4)).toEqual({ stock: 0, outbox: 6 });
  });

  it('answers a shopper at the limit with 409 naming the earlier order', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 2 });
    const first = (await (await buy({ productId }, { user: 'bob' })).json()) as { orderId: string };
    const again = await buy({ productId }, { user: 'bob' });
    expect(again.status).toBe(409);
    expect(await problem(again)).toMatchObject({
      type: 'urn:seckill:problem:limit-reached',
      orderId: first.orderId,
    });
  });

  it('says what is wrong with a quantity over the limit', async () => {
    const productId = newProduct();
    await seed(productId, { total: 20, strategy: 'lockfree', segments: 1, limitPerUser: 5 });
    const res = await buy({ productId, quantity: 6 }, { user: 'greedy6' });
    expect(res.status).toBe(409);
    const body = await problem(res);
    expect(body.type).toBe('urn:seckill:problem:limit-reached');
    expect(body.detail).toBe(`6 units are more than the limit of 5 per shopper for "${productId}"`);
    expect(await redisFacts(productId, 1)).toEqual({ stock: 20, outbox: 0 });
  });

  it('counts a request that fails before its route under that route, not as unmatched', async () => {
    const metrics = async () => await (await fetch(`${app.url}/metrics`)).text();
    const line = /^http_requests_total\{method="POST",route="\/seckill",status="400"\} (\d+)$/m;
    const before = Number(line.exec(await metrics())?.[1] ?? 0);
    expect((await buy(null, { user: 'u', raw: '{"productId":' })).status).toBe(400);
    expect(Number(line.exec(await metrics())?.[1] ?? 0)).toBe(before + 1);
  });

  it('answers 425 before the window and 410 after it', async () => {
    const productId = newProduct();
    await seed(productId, {
      total: 5,
      strategy: 'lockfree',
      segments: 1,
      startsAt: new Date(Date.now() + 60_000).toISOString(),
    });
    const early = await buy({ productId }, { user: 'e' });
    expect(early.status).toBe(425);
    expect(await problem(early)).toMatchObject({ type: 'urn:seckill:problem:not-started' });
    await seed(
      productId,
      {
        total: 5,
        strategy: 'lockfree',
        segments: 1,
        endsAt: new Date(Date.now() - 1).toISOString(),
      },
      '?force=true',
    );
    const late = await buy({ productId }, { user: 'e' });
    expect(late.status).toBe(410);
    await problem(late);
  });

  describe('bad input gets a 4xx problem and changes nothing', () => {
    let productId: string;
    beforeAll(async () => {
      productId = newProduct();
      await seed(productId, { total: 10, strategy: 'segmented', segments: 2 });
    });
    const big = JSON.stringify({ productId: 'x', pad: 'y'.repeat(2_000) });
    const cases: Array<[string, () => Promise<Response>, number]> = [
      ['missing productId', () => buy({}, { user: 'u' }), 400],
      ['extra field', () => buy({ productId, colour: 1 }, { user: 'u' }), 400],
      ['quantity 0', () => buy({ productId, quantity: 0 }, { user: 'u' }), 400],
      ['quantity -1', () => buy({ productId, quantity: -1 }, { user: 'u' }), 400],
      ['quantity 1.5', () => buy({ productId, quantity: 1.5 }, { user: 'u' }), 400],
      ['quantity "1e9"', () => buy({ productId, quantity: '1e9' }, { user: 'u' }), 400],
      ['quantity 10^12', () => buy({ productId, quantity: 1e12 }, { user: 'u' }), 400],
      ['productId with braces', () => buy({ productId: 'a{b}' }, { user: 'u' }), 400],
      ['productId a number', () => buy({ productId: 5 }, { user: 'u' }), 400],
      ['body an array', () => buy([productId], { user: 'u' }), 400],
      ['no body', () => buy(undefined, { user: 'u', raw: '' }), 400],
      ['malformed JSON', () => buy(null, { user: 'u', raw: '{"productId":' }), 400],
      ['oversized body', () => buy(null, { user: 'u', raw: big }), 413],
      [
        'wrong content type',
        () =>
          fetch(`${app.url}/seckill`, {
            method: 'POST',
            headers: { 'content-type': 'text/plain', 'x-user-id': 'u' },
            body: `productId=${productId}`,
          }),
        415,
      ],
      ['no user id', () => buy({ productId }), 401],
      ['bad user id', () => buy({ productId }, { user: 'a b' }), 400],
      ['unknown product', () => buy({ productId: 'no-such-product' }, { user: 'u' }), 404],
      [
        'bad idempotency key',
        () => buy({ productId }, { user: 'u', headers: { 'idempotency-key': 'é' } }),
        400,
      ],
      ['missing bearer (jwt mode)', () => buy({ productId }, { base: jwtApp.url }), 401],
      [
        'bad token (jwt mode)',
        () =>
          buy(
            { productId },
            { base: jwtApp.url, headers: { authorization: 'Bearer abc.def.ghi' } },
          ),
        401,
      ],
      [
        'token signed with another secret',
        () =>
          buy(
            { productId },
            {
              base: jwtApp.url,
              headers: {
                authorization: `Bearer ${signJwt({ sub: 'u' }, 'another-secret-another-secret-xx')}`,
              },
            },
          ),
        401,
      ],
      [
        'expired token',
        () =>
          buy(
            { productId },
            {
              base: jwtApp.url,
              headers: { authorization: `Bearer ${signJwt({ sub: 'u', exp: 1 }, SECRET)}` },
            },
          ),
        401,
      ],
      [
        'token whose exp is a string (expired an hour ago)',
        () =>
          buy(
            { productId },
            {
              base: jwtApp.url,
              headers: {
                authorization: `Bearer ${signJwt({ sub: 'u', exp: String(nowS() - 3_600) }, SECRET)}`,
              },
            },
          ),
        401,
      ],
      [
        'token without exp',
        () =>
          buy(
            { productId },
            {
              base: jwtApp.url,
              headers: { authorization: `Bearer ${signJwt({ sub: 'u' }, SECRET)}` },
            },
          ),
        401,
      ],
      [
        'token whose signature has "=" appended',
        () =>
          buy(
            { productId },
            {
              base: jwtApp.url,
              headers: {
                authorization: `Bearer ${signJwt({ sub: 'u', exp: nowS() + 600 }, SECRET)}=`,
              },
            },
          ),
        401,
      ],
      [
        'token signed with alg none',
        () => {
          const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
          const token = `${enc({ alg: 'none', typ: 'JWT' })}.${enc({ sub: 'u', exp: nowS() + 600 })}.`;
          return buy(
            { productId },
            { base: jwtApp.url, headers: { authorization: `Bearer ${token}` } },
          );
        },
        401,
      ],
      [
        'token without sub',
        () =>
          buy(
            { productId },
            {
              base: jwtApp.url,
              headers: { authorization: `Bearer ${signJwt({ exp: nowS() + 600 }, SECRET)}` },
            },
          ),
        401,
      ],
      [
        'userId in the body (jwt mode)',
        () =>
          buy(
            { productId, userId: 'x' },
            {
              base: jwtApp.url,
              headers: { authorization: `Bearer ${signJwt({ sub: 'u' }, SECRET)}` },
            },
          ),
        400,
      ],
    ];
    it.each(cases)('%s', async (_, send, status) => {
      const before = await redisFacts(productId, 2);
      const res = await send();
      expect(res.status).toBe(status);
      await problem(res);
      expect(await redisFacts(productId, 2)).toEqual(before);
    });

    it('a valid token buys in jwt mode', async () => {
      const res = await buy(
        { productId },
        {
          base: jwtApp.url,
          headers: {
            authorization: `Bearer ${signJwt({ sub: 'jwt-user', exp: Math.floor(Date.now() / 1000) + 600 }, SECRET)}`,
          },
        },
      );
      expect(res.status).toBe(202);
    });
  });
});

describe('Idempotency-Key', () => {
  it('replays the stored answer for the same key and body', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 2 });
    const h = { 'idempotency-key': 'k-replay' };
    const a = await buy({ productId }, { user: 'i1', headers: h });
    const b = await buy({ productId }, { user: 'i1', headers: h });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(await b.json()).toEqual(await a.json());
    expect((await redisFacts(productId, 2)).outbox).toBe(1);
  });

  it('answers the same key with another body with 422', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 2, limitPerUser: 3 });
    const h = { 'idempotency-key': 'k-body' };
    expect((await buy({ productId }, { user: 'i2', headers: h })).status).toBe(202);
    const other = await buy({ productId, quantity: 2 }, { user: 'i2', headers: h });
    expect(other.status).toBe(422);
    await problem(other);
    expect((await redisFacts(productId, 2)).outbox).toBe(1);
  });

  it('20 concurrent duplicates run exactly one deduct; the rest get 409 or the replay', async () => {
    const productId = newProduct();
    await seed(productId, { total: 50, strategy: 'segmented', segments: 4, limitPerUser: 50 });
    const ready = barrier(20);
    const res = await Promise.all(
      Array.from({ length: 20 }, async () => {
        await ready();
        return buy({ productId }, { user: 'i3', headers: { 'idempotency-key': 'k-dup' } });
      }),
    );
    const statuses = res.map((r) => r.status);
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 202 || s === 409)).toBe(true);
    const ids = new Set<string>();
    for (const r of res)
      if (r.status === 202) ids.add(((await r.json()) as { orderId: string }).orderId);
    expect(ids.size).toBe(1);
    expect(await redisFacts(productId, 4)).toEqual({ stock: 49, outbox: 1 });
  });

  it('scopes keys per shopper: the same key from another user is a new purchase', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 2 });
    const h = { 'idempotency-key': 'k-shared' };
    const a = (await (await buy({ productId }, { user: 'i4', headers: h })).json()) as {
      orderId: string;
    };
    const b = (await (await buy({ productId }, { user: 'i5', headers: h })).json()) as {
      orderId: string;
    };
    expect(a.orderId).not.toBe(b.orderId);
    expect((await redisFacts(productId, 2)).outbox).toBe(2);
  });
});
