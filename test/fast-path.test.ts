/**
 * The fast path in front of Express (src/http/fast-path.ts) answers exactly as Express does: the
 * same requests go to a process with it (FAST_PATH=true) and one without, and status, headers and
 * body must match (request ids and order ids aside, which differ by construction). The requests it
 * is meant to answer itself are shown not to reach Express there (a probe on Express's entry point).
 */
import { randomBytes } from 'node:crypto';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from './support/app.js';
import { waitFor } from './support/cli.js';
import { useNamespace } from './support/namespace.js';

const ns = useNamespace();
let fast: RunningApp;
let slow: RunningApp;
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
});
afterAll(async () => {
  await fast?.close();
  await slow?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const COMPARED = ['content-type', 'content-length', 'retry-after', 'ratelimit', 'ratelimit-policy'];

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
  const body = (await res.text())
    .replaceAll(id, '<request-id>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>');
  const headers = Object.fromEntries(COMPARED.map((h) => [h, res.headers.get(h)]));
  expect(res.headers.get('x-request-id')).toBe(id);
  return { status: res.status, headers, body };
}

let n = 0;
/** The same request to both processes: the answers, and whether each reached Express. */
async function both(o: Parameters<typeof send>[2]) {
  const i = String(n++).padStart(3, '0');
  // a buyer of their own on each side ("*" in X-User-Id): one's purchase must not limit the other
  const side = (x: string) => {
    const user = o.headers?.['x-user-id'];
    return user?.endsWith('*')
      ? { ...o, headers: { ...o.headers, 'x-user-id': `${user.slice(0, -1)}${x}` } }
      : o;
  };
  const [f, s] = [
    await send(fast, `fp-f-${i}`, side('f')),
    await send(slow, `fp-s-${i}`, side('s')),
  ];
  return {
    fast: f,
    slow: s,
    fastReachedExpress: reachedExpress.has(`fp-f-${i}`),
    slowReachedExpress: reachedExpress.has(`fp-s-${i}`),
  };
}

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

describe('the fast path answers as Express does', () => {
  const soldOut = `fp${randomBytes(3).toString('hex')}`;
  const onSale = `fp${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    for (const [p, total] of [
      [soldOut, 1],
      [onSale, 1_000],
    ] as const) {
      const res = await fetch(`${fast.url}/admin/products/${p}`, {
        method: 'PUT',
        headers: admin,
        body: JSON.stringify({ total, strategy: 'lockfree', segments: 1 }),
      });
      expect(res.status).toBe(201);
    }
    const last = await fetch(`${fast.url}/seckill`, {
      method: 'POST',
      ...json({ productId: soldOut }, { 'x-user-id': 'fp-last' }),
    });
    expect(last.status).toBe(202);
    // both processes learn it is sold out (the deduct that finds it empty tells the others)
    for (const app of [fast, slow]) {
      await waitFor(
        'the process to know the product is sold out',
        async () => {
          await fetch(`${app.url}/seckill`, {
            method: 'POST',
            ...json(
              { productId: soldOut },
              { 'x-user-id': `fp-learn-${randomBytes(2).toString('hex')}` },
            ),
          });
          return app.rt.inventory.sale.refusalFromMemory(soldOut) !== undefined;
        },
        15_000,
      );
    }
  });

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
    ['a product on sale', json({ productId: onSale }, { 'x-user-id': 'fp-d*' })],
    [
      'a keyed purchase of a sold-out product',
      json({ productId: soldOut }, { 'x-user-id': 'fp-e*', 'idempotency-key': 'fp-key-1' }),
    ],
    ['a body naming the buyer', json({ productId: soldOut, userId: 'fp-f' })],
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
    ['an invalid product id', json({ productId: 'bad id!' }, { 'x-user-id': 'fp-i' })],
    ['an unknown field', json({ productId: soldOut, extra: 1 }, { 'x-user-id': 'fp-j' })],
    ['an unknown product', json({ productId: 'fp-no-such' }, { 'x-user-id': 'fp-k' })],
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
  ];
  for (const [what, req] of expressCases) {
    it(`${what}: Express's answer on both`, async () => {
      const r = await both(req);
      expect(r.fast).toEqual(r.slow);
      expect(r.slowReachedExpress).toBe(true);
    });
  }

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
