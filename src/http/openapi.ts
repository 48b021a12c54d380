/**
 * `GET /openapi.json`: the API as OpenAPI 3.1, generated from the zod schemas the routes validate
 * requests with and the answer schemas in api-schemas.ts (zod's own JSON Schema output, draft
 * 2020-12, which OpenAPI 3.1 uses). test/openapi.test.ts validates the document and checks real
 * answers against it.
 */
import type { IRouter } from 'express';
import { z } from 'zod';
import { seedRequest } from '../services/index.js';
import * as answers from './api-schemas.js';
import { payBody } from './orders.js';
import { webhookBody } from './payment-webhook.js';
import { purchaseBody } from './shop.js';

const SCHEMAS = {
  Problem: answers.problem,
  PurchaseRequest: purchaseBody,
  PurchaseAccepted: answers.purchaseAccepted,
  Order: answers.orderView,
  PayRequest: payBody,
  PaymentIntent: answers.paymentIntent,
  PaymentNotification: webhookBody,
  WebhookAck: answers.webhookAck,
  Product: answers.productPublic,
  SaleToken: answers.saleToken,
  SeedRequest: seedRequest,
  SeedResult: answers.seedResult,
  AdminProduct: answers.adminProduct,
  ReconcileReport: answers.reconcileReport,
  Health: answers.health,
  Ready: answers.ready,
} as const;

type SchemaName = keyof typeof SCHEMAS;

function jsonSchema(s: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io }) as Record<
    string,
    unknown
  >;
  return rest;
}

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: SchemaName) => ({ 'application/json': { schema: ref(name) } });
const problemJson = { 'application/problem+json': { schema: ref('Problem') } };

/** An answer: a body schema, or a problem (4xx/5xx). */
function responses(ok: Record<number, [SchemaName, string]>, problems: Record<number, string>) {
  const out: Record<string, unknown> = {};
  for (const [status, [name, description]] of Object.entries(ok)) {
    out[status] = { description, content: json(name) };
  }
  for (const [status, description] of Object.entries(problems)) {
    out[status] = { description, content: problemJson };
  }
  return out;
}

const idParam = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

const SHOPPER = [{ shopperJwt: [] }, { devShopper: [] }];
const ADMIN = [{ admin: [] }];

export function openApiDocument(): Record<string, unknown> {
  const requests: SchemaName[] = [
    'PurchaseRequest',
    'PayRequest',
    'PaymentNotification',
    'SeedRequest',
  ];
  const schemas = Object.fromEntries(
    Object.entries(SCHEMAS).map(([name, s]) => [
      name,
      jsonSchema(s, requests.includes(name as SchemaName) ? 'input' : 'output'),
    ]),
  );
  const product = idParam('id', 'product id');
  const order = idParam('id', 'order id (UUID)');
  return {
    openapi: '3.1.0',
    info: {
      title: 'seckill',
      version: '1.0.0',
      description:
        'Flash-sale backend: exact stock over Redis segments, orders persisted to PostgreSQL. Errors are RFC 9457 problem+json.',
    },
    components: {
      schemas,
      securitySchemes: {
        shopperJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256, sub = shopper)' },
        devShopper: {
          type: 'apiKey',
          in: 'header',
          name: 'X-User-Id',
          description: 'AUTH_MODE=dev only',
        },
        admin: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
        webhookSignature: { type: 'apiKey', in: 'header', name: 'Seckill-Signature' },
        standardWebhook: {
          type: 'apiKey',
          in: 'header',
          name: 'webhook-signature',
          description: 'Standard Webhooks: with webhook-id and webhook-timestamp',
        },
      },
    },
    paths: {
      '/seckill': {
        post: {
          summary: 'Buy',
          security: SHOPPER,
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              schema: { type: 'string', maxLength: 255 },
            },
            { name: 'Sale-Token', in: 'header', required: false, schema: { type: 'string' } },
          ],
          requestBody: { required: true, content: json('PurchaseRequest') },
          responses: responses(
            { 202: ['PurchaseAccepted', 'sold; the order is pending'] },
            {
              400: 'invalid request',
              401: 'no or bad identity',
              403: 'sale token refused',
              404: 'unknown product',
              409: 'sold out, limit reached, not enough stock, in progress',
              410: 'ended',
              413: 'body too large',
              415: 'not JSON',
              422: 'Idempotency-Key reused with another request',
              425: 'not started',
              429: 'rate limited, or too many Idempotency-Key records of purchases that sold',
              503: 'busy, overloaded or a store unavailable (Retry-After)',
            },
          ),
        },
      },
      '/products/{id}': {
        get: {
          summary: "A product's public view",
          parameters: [product],
          responses: responses(
            { 200: ['Product', 'the product'] },
            { 400: 'bad id', 404: 'unknown product' },
          ),
        },
      },
      '/products/{id}/sale-token': {
        post: {
          summary: 'A sale token for a product seeded with requireSaleToken',
          security: SHOPPER,
          parameters: [product],
          responses: responses(
            { 201: ['SaleToken', 'the token'] },
            {
              400: 'bad id',
              401: 'no identity',
              404: 'unknown product',
              410: 'ended',
              425: 'before the lead time',
              429: 'rate limited',
              503: 'tokens not configured',
            },
          ),
        },
      },
      '/orders/{id}': {
        get: {
          summary: 'An order (its buyer, or an admin)',
          security: [...SHOPPER, ...ADMIN],
          parameters: [order],
          responses: responses(
            { 200: ['Order', 'the order'] },
            { 401: 'no identity', 404: 'no such order of yours' },
          ),
        },
      },
      '/orders/{id}/pay': {
        post: {
          summary:
            "Start paying an order awaiting payment: its payment intent (one per order); only the provider's signed webhook marks it paid",
          security: SHOPPER,
          parameters: [order],
          requestBody: { required: false, content: json('PayRequest') },
          responses: responses(
            {
              200: ['PaymentIntent', 'the same intent again'],
              201: ['PaymentIntent', 'a new intent'],
            },
            {
              400: 'bad body (a paymentId is not accepted)',
              401: 'no identity',
              404: 'no such order of yours',
              409: 'expired, cancelled, paid, final',
              503: 'still settling',
            },
          ),
        },
      },
      '/orders/{id}/cancel': {
        post: {
          summary: 'Cancel an order awaiting payment (its units go back on sale)',
          security: SHOPPER,
          parameters: [order],
          responses: responses(
            { 200: ['Order', 'cancelled'] },
            {
              401: 'no identity',
              404: 'no such order of yours',
              409: 'paid, expired or final',
              503: 'still settling',
            },
          ),
        },
      },
      '/payments/webhook': {
        post: {
          summary:
            "The payment provider's signed notice (Seckill-Signature or Standard Webhooks) that an order's payment intent was paid",
          security: [{ webhookSignature: [] }, { standardWebhook: [] }],
          requestBody: { required: true, content: json('PaymentNotification') },
          responses: {
            ...responses(
              { 200: ['Order', 'paid (or the same answer again)'] },
              {
                400: 'bad body',
                401: 'bad, stale or missing signature',
                404: 'unknown payment intent for that order',
                409: 'cannot be paid (expired, cancelled, paid otherwise, final), payment id used',
                503: 'webhook not configured',
              },
            ),
          },
        },
      },
      '/admin/products/{id}': {
        put: {
          summary: 'Seed (201) or reseed (200) a product',
          security: ADMIN,
          parameters: [
            product,
            { name: 'force', in: 'query', required: false, schema: { enum: ['true', 'false'] } },
          ],
          requestBody: { required: true, content: json('SeedRequest') },
          responses: responses(
            { 200: ['SeedResult', 'reseeded'], 201: ['SeedResult', 'seeded'] },
            {
              400: 'invalid seed',
              401: 'no token',
              403: 'wrong token',
              409: 'the sale is live (add ?force=true)',
            },
          ),
        },
        get: {
          summary: 'Every segment with its stock, sold, pending and persisted units',
          security: ADMIN,
          parameters: [product],
          responses: responses(
            { 200: ['AdminProduct', 'the product'] },
            { 401: 'no token', 403: 'wrong token', 404: 'unknown product' },
          ),
        },
      },
      '/admin/products/{id}/reconcile': {
        post: {
          summary: 'Reconcile the current sale',
          security: ADMIN,
          parameters: [product],
          responses: responses(
            { 200: ['ReconcileReport', 'the report (ok: false on a mismatch)'] },
            { 401: 'no token', 403: 'wrong token', 404: 'unknown product' },
          ),
        },
      },
      '/healthz': {
        get: { summary: 'Alive', responses: responses({ 200: ['Health', 'alive'] }, {}) },
      },
      '/readyz': {
        get: {
          summary: 'Redis and PostgreSQL answer',
          responses: responses({ 200: ['Ready', 'ready'] }, { 503: 'not ready, or draining' }),
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: {
            200: {
              description: 'text exposition format',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
        },
      },
    },
  };
}

export function mountOpenApi(router: IRouter): void {
  let text: string | undefined;
  router.get('/openapi.json', (_req, res) => {
    text ??= JSON.stringify(openApiDocument());
    res.type('application/json').send(text);
  });
}
