import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProblemError } from '../../src/errors.js';
import { errorHandler } from '../../src/http/problem.js';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import { waitFor } from '../support/cli.js';

const ns = useNamespace();

async function problem(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as Record<string, unknown>;
  expect(body.status).toBe(res.status);
  expect(body.type).toMatch(/^urn:seckill:problem:/);
  expect(typeof body.title).toBe('string');
  return body;
}

describe('HTTP skeleton against real Redis and PostgreSQL', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startApp(ns.config({ BODY_LIMIT_BYTES: '1024' }));
  });
  afterAll(() => app.close());

  it('answers /healthz and /readyz when both stores answer', async () => {
    expect(await (await fetch(`${app.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${app.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { redis: 'up', postgres: 'up' },
    });
  });

  it('answers an unknown route with a 404 problem', async () => {
    const res = await fetch(`${app.url}/no/such/route`);
    expect(res.status).toBe(404);
    expect((await problem(res)).type).toBe('urn:seckill:problem:not-found');
  });

  it('answers malformed JSON with a 400 problem, never a 5xx', async () => {
    const res = await fetch(`${app.url}/anything`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"productId": ',
    });
    expect(res.status).toBe(400);
    expect((await problem(res)).type).toBe('urn:seckill:problem:malformed-json');
  });

  it('answers an oversized body with 413', async () => {
    const res = await fetch(`${app.url}/anything`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(2_000) }),
    });
    expect(res.status).toBe(413);
    expect((await problem(res)).type).toBe('urn:seckill:problem:body-too-large');
  });

  it('answers a non-JSON body with 415', async () => {
    const res = await fetch(`${app.url}/anything`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'productId=1',
    });
    expect(res.status).toBe(415);
    expect((await problem(res)).type).toBe('urn:seckill:problem:unsupported-media-type');
  });

  it('echoes a sane X-Request-Id and mints one otherwise', async () => {
    const given = await fetch(`${app.url}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers.get('x-request-id')).toBe('abc-123');
    const minted = await fetch(`${app.url}/healthz`, { headers: { 'x-request-id': 'bad id!' } });
    expect(minted.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const res = await fetch(`${app.url}/nope`, { headers: { 'x-request-id': 'trace-1' } });
    expect((await problem(res)).requestId).toBe('trace-1');
  });

  it('exposes Prometheus metrics with request counts by route and status', async () => {
    await fetch(`${app.url}/healthz`);
    const text = await (await fetch(`${app.url}/metrics`)).text();
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(text).toMatch(
      /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/healthz"/,
    );
    expect(text).toMatch(/http_requests_total\{method="GET",route="unmatched",status="404"\} \d+/);
    expect(text).toContain('process_cpu_user_seconds_total');
  });
});

describe('readiness when Redis is unreachable', () => {
  let app: RunningApp;
  beforeAll(async () => {
    app = await startApp(ns.config({ REDIS_URL: 'redis://127.0.0.1:1' }));
  });
  afterAll(() => app.close());

  it('answers /readyz 503 naming Redis and keeps serving /healthz', async () => {
    const res = await fetch(`${app.url}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    const body = await problem(res);
    expect(body.checks).toEqual({ redis: 'down', postgres: 'up' });
    expect(body.detail).toMatch(/^redis: /);
    for (let i = 0; i < 3; i++) {
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    }
  });
});

describe('error logging', () => {
  async function logsOf(thrown: unknown): Promise<Array<Record<string, unknown>>> {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    const app = express();
    app.get('/x', () => {
      throw thrown;
    });
    app.use(errorHandler(logger));
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      await fetch(`http://127.0.0.1:${port}/x`);
    } finally {
      server.close();
    }
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it('logs an unexpected error at error level with its stack', async () => {
    const logs = await logsOf(new TypeError('boom'));
    expect(logs).toHaveLength(1);
    expect(logs[0]!.level).toBe(50);
    expect((logs[0]!.err as { stack: string }).stack).toContain('TypeError: boom');
  });

  it('logs a deliberate 503 as one warning line naming its cause, without a stack', async () => {
    const logs = await logsOf(
      new ProblemError({
        status: 503,
        code: 'store-unavailable',
        title: 'Store unavailable',
        cause: new Error('connect ECONNREFUSED'),
      }),
    );
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      level: 40,
      problem: 'store-unavailable',
      cause: 'Error: connect ECONNREFUSED',
    });
    expect(JSON.stringify(logs[0])).not.toContain('    at ');
  });
});

describe('shutdown drain', () => {
  it('answers /readyz 503 for DRAIN_MS while it still serves requests, then closes', async () => {
    const app = await startApp(ns.config({ DRAIN_MS: '1500' }));
    expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
    const started = Date.now();
    const closed = app.close();
    const ready = await waitFor(
      '/readyz to answer 503 while draining',
      async () => {
        const res = await fetch(`${app.url}/readyz`);
        return res.status === 503 && res;
      },
      1_000,
      20,
    );
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { type: string }).type).toBe('urn:seckill:problem:draining');
    // still served meanwhile
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${app.url}/products/no-such-product`)).status).toBe(404);
    await closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    await expect(fetch(`${app.url}/healthz`)).rejects.toThrow();
  });

  it('refuses a drain as long as the forced-exit timeout', () => {
    expect(() => ns.config({ DRAIN_MS: '10000', SHUTDOWN_TIMEOUT_MS: '10000' })).toThrow(
      /DRAIN_MS: 10000 must be shorter than SHUTDOWN_TIMEOUT_MS/,
    );
  });
});
