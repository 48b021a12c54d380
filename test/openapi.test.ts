/**
 * /openapi.json: a valid OpenAPI 3.1 document, and the real API answers as it says: every answer
 * below (success and problem) has a documented status and a body its schema accepts (Ajv, JSON
 * Schema 2020-12).
 */
import { randomBytes } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signStandardWebhook, signWebhook } from '../src/http/webhook-signature.js';
import { startApp, type RunningApp } from './support/app.js';
import { useNamespace } from './support/namespace.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'openapi-test-webhook-secret-0123456789';
let app: RunningApp;
let doc: {
  paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>>;
};

beforeAll(async () => {
  app = await startApp(
    ns.config({
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      SALE_TOKEN_SECRET: 'openapi-test-sale-token-secret-0123456',
    }),
    { worker: true },
  );
  doc = (await (await fetch(`${app.url}/openapi.json`)).json()) as typeof doc;
});
afterAll(async () => {
  await app?.close();
});

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect((doc as unknown as { openapi: string }).openapi).toBe('3.1.0');
  });

  it('the API answers as documented: statuses and bodies of every route', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema(doc, 'openapi');
    const seen: string[] = [];

    /** Calls the API and checks the answer against the document's operation. */
    async function call(
      method: string,
      template: string,
      path: string,
      o: { body?: unknown; headers?: Record<string, string>; raw?: string } = {},
    ) {
      const res = await fetch(`${app.url}${path}`, {
        method,
        headers: {
          ...(o.body !== undefined || o.raw !== undefined
            ? { 'content-type': 'application/json' }
            : {}),
          ...o.headers,
        },
        ...(o.raw !== undefined
          ? { body: o.raw }
          : o.body !== undefined && { body: JSON.stringify(o.body) }),
      });
      const op = doc.paths[template]?.[method.toLowerCase()];
      expect(op, `${method} ${template} is documented`).toBeDefined();
      const answer = op!.responses[String(res.status)] as
        { content?: Record<string, { schema: { $ref: string } }> } | undefined;
      expect(answer, `${method} ${template} answered an undocumented ${res.status}`).toBeDefined();
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
      const media = answer!.content?.[type];
      expect(media, `${method} ${template} ${res.status} as ${type}`).toBeDefined();
      const body = (await res.json()) as unknown;
      const validate = ajv.getSchema(`openapi${media!.schema.$ref}`)!;
      expect(
        validate(body),
        `${method} ${path} ${res.status}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(body)}`,
      ).toBe(true);
      seen.push(`${method} ${template} ${res.status}`);
      return { status: res.status, body: body as Record<string, unknown> };
    }

    const admin = { authorization: `Bearer ${ns.adminToken}` };
    const p = `oa${randomBytes(3).toString('hex')}`;
    const user = { 'x-user-id': 'oa-alice' };
    const seed = { total: 5, strategy: 'segmented', segments: 2, payWithinSeconds: 600 };

    await call('GET', '/healthz', '/healthz');
    await call('GET', '/readyz', '/readyz');
    expect(
      (
        await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
          body: seed,
          headers: admin,
        })
      ).status,
    ).toBe(201);
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}?force=true`, {
      body: seed,
      headers: admin,
    });
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
      body: { total: -1 },
      headers: admin,
    });
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, { body: seed });
    await call('GET', '/products/{id}', `/products/${p}`);
    await call('GET', '/products/{id}', '/products/nope-no-such');
    await call('POST', '/products/{id}/sale-token', `/products/${p}/sale-token`, { headers: user });

    const bought = await call('POST', '/seckill', '/seckill', {
      body: { productId: p },
      headers: user,
    });
    expect(bought.status).toBe(202);
    const orderId = bought.body.orderId as string;
    await call('POST', '/seckill', '/seckill', { body: { productId: p }, headers: user }); // 409
    await call('POST', '/seckill', '/seckill', { body: { productId: p, extra: 1 }, headers: user });
    await call('POST', '/seckill', '/seckill', { body: { productId: p } }); // 401
    await call('POST', '/seckill', '/seckill', {
      body: { productId: 'nope-no-such' },
      headers: user,
    });
    await call('POST', '/seckill', '/seckill', { raw: '{"productId":', headers: user });

    await call('GET', '/orders/{id}', `/orders/${orderId}`, { headers: user });
    await call('GET', '/orders/{id}', `/orders/${orderId}`, { headers: { 'x-user-id': 'oa-bob' } });
    const intent = await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, {
      body: {},
      headers: user,
    });
    expect(intent.status).toBe(201);
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, { headers: user }); // 200
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, {
      body: { paymentId: 'oa-1' },
      headers: user,
    });
    const paid = JSON.stringify({
      type: 'payment.succeeded',
      orderId,
      paymentIntentId: intent.body.paymentIntentId,
      paymentId: 'oa-1',
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: paid,
      headers: signStandardWebhook(`msg_${orderId}`, paid, WEBHOOK_SECRET),
    });
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, { headers: user }); // 409
    await call('POST', '/orders/{id}/cancel', `/orders/${orderId}/cancel`, { headers: user });

    const second = await call('POST', '/seckill', '/seckill', {
      body: { productId: p },
      headers: { 'x-user-id': 'oa-carol' },
    });
    const other = second.body.orderId as string;
    const carol = { 'x-user-id': 'oa-carol' };
    const started = await call('POST', '/orders/{id}/pay', `/orders/${other}/pay`, {
      headers: carol,
    });
    await call('POST', '/orders/{id}/cancel', `/orders/${other}/cancel`, { headers: carol });
    const note = JSON.stringify({
      type: 'payment.succeeded',
      orderId: other,
      paymentIntentId: started.body.paymentIntentId,
      paymentId: 'oa-3',
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: note,
      headers: { 'seckill-signature': signWebhook(note, WEBHOOK_SECRET) },
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: note,
      headers: { 'seckill-signature': 't=1,v1=00' },
    });

    await call('GET', '/admin/products/{id}', `/admin/products/${p}`, { headers: admin });
    await call('POST', '/admin/products/{id}/reconcile', `/admin/products/${p}/reconcile`, {
      headers: admin,
    });
    await call('GET', '/admin/products/{id}', '/admin/products/nope-no-such', { headers: admin });

    // every documented operation was called at least once
    const called = new Set(seen.map((s) => s.split(' ').slice(0, 2).join(' ')));
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.filter((d) => !called.has(d) && d !== 'GET /metrics')).toEqual([]);
  });
});
