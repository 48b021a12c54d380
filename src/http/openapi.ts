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
import { loginBody } from './dashboard.js';
import { mountApiReference } from './api-reference.js';
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
  LoginRequest: loginBody,
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

type Security = Array<Record<string, string[]>>;
const SHOPPER: Security = [{ shopperJwt: [] }, { devShopper: [] }];
const ADMIN: Security = [{ admin: [] }];
const ADMIN_OR_SESSION: Security = [{ admin: [] }, { adminSession: [] }];

/** Response headers, each defined once (components.headers) and referenced per answer. */
const HEADERS = {
  'X-Request-Id': {
    description:
      "this request's id (the caller's X-Request-Id when it sent one): quote it in reports",
    schema: { type: 'string' },
  },
  'Retry-After': {
    description: 'seconds to wait before trying again',
    schema: { type: 'integer', minimum: 0 },
  },
  RateLimit: {
    description:
      'the tightest limit applied: "<name>";r=<remaining>;t=<seconds to full> (IETF draft)',
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: 'the limits applied: "<name>";q=<quota>;w=<window seconds>, ... (IETF draft)',
    schema: { type: 'string' },
  },
  'Idempotent-Replayed': {
    description:
      'true when this is the stored answer of an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
  Location: { description: 'the order this purchase made', schema: { type: 'string' } },
} as const;
type HeaderName = keyof typeof HEADERS;

type Media = SchemaName | 'html' | 'text' | 'javascript' | 'event-stream' | 'empty';

/**
 * One operation of the API: the route the app mounts (Express path form) and what it answers.
 * The document's paths are generated from this table; test/openapi.test.ts checks that the app
 * mounts exactly these routes and answers only what they say.
 */
export interface Operation {
  method: 'get' | 'post' | 'put';
  /** as mounted, e.g. /orders/:id */
  route: string;
  operationId: string;
  tag: 'shop' | 'orders' | 'payments' | 'admin' | 'dashboard' | 'probes' | 'meta';
  summary: string;
  security?: Security;
  parameters?: unknown[];
  body?: { schema: SchemaName; required: boolean };
  ok: Record<number, [Media, string, HeaderName[]?]>;
  problems?: Record<number, string>;
  /** answers 503 store-unavailable when Redis or PostgreSQL does not answer */
  store?: boolean;
  /** rate limits apply: RateLimit headers, 429 with Retry-After */
  limited?: boolean;
}

const product = idParam('id', 'product id');
const order = idParam('id', 'order id (UUID)');

export const OPERATIONS: Operation[] = [
  {
    method: 'post',
    route: '/seckill',
    operationId: 'buy',
    tag: 'shop',
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
    body: { schema: 'PurchaseRequest', required: true },
    ok: {
      202: [
        'PurchaseAccepted',
        'sold; the order is pending',
        ['Location', 'Idempotent-Replayed', 'RateLimit', 'RateLimit-Policy'],
      ],
    },
    problems: {
      400: 'invalid request',
      401: 'no or bad identity',
      403: 'sale token refused',
      404: 'unknown product',
      409: 'sold out, limit reached, not enough stock, in progress',
      410: 'ended',
      422: 'Idempotency-Key reused with another request',
      425: 'not started',
      429: 'rate limited, or too many Idempotency-Key records of purchases that sold',
      503: 'busy, overloaded or a store unavailable (Retry-After)',
    },
    store: true,
    limited: true,
  },
  {
    method: 'get',
    route: '/products/:id',
    operationId: 'getProduct',
    tag: 'shop',
    summary: "A product's public view",
    parameters: [product],
    ok: { 200: ['Product', 'the product'] },
    problems: { 400: 'bad id', 404: 'unknown product' },
    store: true,
  },
  {
    method: 'post',
    route: '/products/:id/sale-token',
    operationId: 'getSaleToken',
    tag: 'shop',
    summary: 'A sale token for a product seeded with requireSaleToken',
    security: SHOPPER,
    parameters: [product],
    ok: { 201: ['SaleToken', 'the token'] },
    problems: {
      400: 'bad id',
      401: 'no identity',
      404: 'unknown product',
      410: 'ended',
      425: 'before the lead time',
      503: 'tokens not configured',
    },
    store: true,
    limited: true,
  },
  {
    method: 'get',
    route: '/orders/:id',
    operationId: 'getOrder',
    tag: 'orders',
    summary: 'An order (its buyer, or an admin)',
    security: [...SHOPPER, ...ADMIN],
    parameters: [order],
    ok: { 200: ['Order', 'the order'] },
    problems: { 401: 'no identity', 404: 'no such order of yours' },
    store: true,
  },
  {
    method: 'post',
    route: '/orders/:id/pay',
    operationId: 'startPayment',
    tag: 'payments',
    summary:
      "Start paying an order awaiting payment: its payment intent (one per order); only the provider's signed webhook marks it paid",
    security: SHOPPER,
    parameters: [order],
    body: { schema: 'PayRequest', required: false },
    ok: {
      200: ['PaymentIntent', 'the same intent again'],
      201: ['PaymentIntent', 'a new intent'],
    },
    problems: {
      400: 'bad body (a paymentId is not accepted)',
      401: 'no identity',
      404: 'no such order of yours',
      409: 'expired, cancelled, paid, final',
      503: 'still settling',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/orders/:id/cancel',
    operationId: 'cancelOrder',
    tag: 'orders',
    summary: 'Cancel an order awaiting payment (its units go back on sale)',
    security: SHOPPER,
    parameters: [order],
    ok: { 200: ['Order', 'cancelled'] },
    problems: {
      401: 'no identity',
      404: 'no such order of yours',
      409: 'paid, expired or final',
      503: 'still settling',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/payments/webhook',
    operationId: 'paymentWebhook',
    tag: 'payments',
    summary:
      "The payment provider's signed notice (Seckill-Signature or Standard Webhooks) that an order's payment intent was paid",
    security: [{ webhookSignature: [] }, { standardWebhook: [] }],
    body: { schema: 'PaymentNotification', required: true },
    ok: { 200: ['Order', 'paid (or the same answer again)', ['Idempotent-Replayed']] },
    problems: {
      400: 'bad body',
      401: 'bad, stale or missing signature',
      404: 'unknown payment intent for that order',
      409: 'cannot be paid (expired, cancelled, paid otherwise, final), payment id used',
      503: 'webhook not configured',
    },
    store: true,
  },
  {
    method: 'put',
    route: '/admin/products/:id',
    operationId: 'seedProduct',
    tag: 'admin',
    summary: 'Seed (201) or reseed (200) a product',
    security: ADMIN,
    parameters: [
      product,
      { name: 'force', in: 'query', required: false, schema: { enum: ['true', 'false'] } },
    ],
    body: { schema: 'SeedRequest', required: true },
    ok: { 200: ['SeedResult', 'reseeded'], 201: ['SeedResult', 'seeded'] },
    problems: {
      400: 'invalid seed',
      401: 'no token',
      403: 'wrong token',
      409: 'the sale is live (add ?force=true)',
      429: 'too many wrong admin tokens from this address',
    },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/products/:id',
    operationId: 'getAdminProduct',
    tag: 'admin',
    summary: 'Every segment with its stock, sold, pending and persisted units',
    security: ADMIN,
    parameters: [product],
    ok: { 200: ['AdminProduct', 'the product'] },
    problems: {
      401: 'no token',
      403: 'wrong token',
      404: 'unknown product',
      429: 'too many wrong admin tokens from this address',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/admin/products/:id/reconcile',
    operationId: 'reconcileProduct',
    tag: 'admin',
    summary: 'Reconcile the current sale',
    security: ADMIN,
    parameters: [product],
    ok: { 200: ['ReconcileReport', 'the report (ok: false on a mismatch)'] },
    problems: {
      401: 'no token',
      403: 'wrong token',
      404: 'unknown product',
      429: 'too many wrong admin tokens from this address',
    },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/dashboard',
    operationId: 'dashboardPage',
    tag: 'dashboard',
    summary: 'The live dashboard (HTML): the login form without a session',
    ok: { 200: ['html', 'the dashboard, or its login form'] },
  },
  {
    method: 'post',
    route: '/admin/dashboard/login',
    operationId: 'dashboardLogin',
    tag: 'dashboard',
    summary:
      'Open an admin session (cookie seckill_admin, path /admin): opens the dashboard and Bull Board',
    body: { schema: 'LoginRequest', required: true },
    ok: { 204: ['empty', 'logged in (Set-Cookie)'] },
    problems: {
      400: 'bad body',
      401: 'wrong admin token',
      429: 'too many wrong admin tokens from this address',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/admin/dashboard/logout',
    operationId: 'dashboardLogout',
    tag: 'dashboard',
    summary: 'Close the admin session (revoked at once)',
    ok: { 204: ['empty', 'logged out'] },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/dashboard/stream',
    operationId: 'dashboardStream',
    tag: 'dashboard',
    summary: "The dashboard's live snapshots (server-sent events)",
    security: ADMIN_OR_SESSION,
    ok: { 200: ['event-stream', 'a snapshot every 500 ms'] },
    problems: { 401: 'no token or session', 403: 'wrong token' },
  },
  {
    method: 'get',
    route: '/admin/queues',
    operationId: 'bullBoard',
    tag: 'dashboard',
    summary: 'Bull Board (HTML) for the order queues; its own pages and API live under it',
    security: ADMIN_OR_SESSION,
    ok: { 200: ['html', 'Bull Board'] },
    problems: { 401: 'no token or session', 403: 'wrong token' },
  },
  {
    method: 'get',
    route: '/healthz',
    operationId: 'health',
    tag: 'probes',
    summary: 'Alive',
    ok: { 200: ['Health', 'alive'] },
  },
  {
    method: 'get',
    route: '/readyz',
    operationId: 'ready',
    tag: 'probes',
    summary: 'Redis and PostgreSQL answer',
    ok: { 200: ['Ready', 'ready'] },
    problems: { 503: 'not ready, or draining' },
  },
  {
    method: 'get',
    route: '/metrics',
    operationId: 'metrics',
    tag: 'probes',
    summary: 'Prometheus metrics',
    ok: { 200: ['text', 'text exposition format'] },
  },
  {
    method: 'get',
    route: '/openapi.json',
    operationId: 'openApiDocument',
    tag: 'meta',
    summary: 'This document',
    ok: { 200: ['json-document' as Media, 'OpenAPI 3.1'] },
  },
  {
    method: 'get',
    route: '/docs',
    operationId: 'apiReference',
    tag: 'meta',
    summary: 'The API reference (HTML), rendered from this document with assets served locally',
    ok: { 200: ['html', 'the reference page'] },
  },
  {
    method: 'get',
    route: '/docs/init.js',
    operationId: 'apiReferenceScript',
    tag: 'meta',
    summary: "The reference page's start script (its other assets are files under /docs/assets/)",
    ok: { 200: ['javascript', 'the script'] },
  },
];

const TAGS = [
  { name: 'shop', description: 'buying: the hot path' },
  { name: 'orders', description: "a buyer's orders" },
  { name: 'payments', description: 'payment intents and the provider webhook' },
  { name: 'admin', description: 'seeding, inspecting and reconciling sales (ADMIN_TOKEN)' },
  { name: 'dashboard', description: 'the live dashboard and Bull Board (admin session or token)' },
  { name: 'probes', description: 'liveness, readiness and metrics' },
  { name: 'meta', description: 'this document and its reference page' },
];

/** `/orders/:id` -> `/orders/{id}` */
export const openApiPath = (route: string) => route.replace(/:(\w+)/g, '{$1}');

const header = (name: HeaderName) => ({ $ref: `#/components/headers/${name}` });

function content(media: Media): Record<string, unknown> | undefined {
  switch (media) {
    case 'empty':
      return undefined;
    case 'html':
      return { 'text/html': { schema: { type: 'string' } } };
    case 'text':
      return { 'text/plain': { schema: { type: 'string' } } };
    case 'javascript':
      return { 'text/javascript': { schema: { type: 'string' } } };
    case 'event-stream':
      return { 'text/event-stream': { schema: { type: 'string' } } };
    default:
      return (media as string) === 'json-document'
        ? { 'application/json': { schema: { type: 'object' } } }
        : json(media as SchemaName);
  }
}

function operation(op: Operation): Record<string, unknown> {
  const withId = (names: HeaderName[] = []) =>
    Object.fromEntries(['X-Request-Id' as HeaderName, ...names].map((h) => [h, header(h)]));
  const problems: Record<number, string> = { ...op.problems };
  if (op.body) {
    problems[413] ??= 'body too large';
    problems[415] ??= 'not JSON';
    problems[400] ??= 'invalid body';
  }
  if (op.store) {
    problems[503] = problems[503]
      ? `${problems[503]}; or Redis / PostgreSQL unavailable (store-unavailable)`
      : 'Redis or PostgreSQL unavailable (store-unavailable, Retry-After)';
  }
  if (op.limited) problems[429] ??= 'rate limited';
  const responses: Record<string, unknown> = {};
  for (const [status, [media, description, headers]] of Object.entries(op.ok)) {
    const c = content(media);
    responses[status] = { description, headers: withId(headers), ...(c && { content: c }) };
  }
  for (const [status, description] of Object.entries(problems)) {
    const n = Number(status);
    const extra: HeaderName[] = [
      ...(n === 425 || n === 429 || n === 503 ? (['Retry-After'] as const) : []),
      ...(op.limited && n === 429 ? (['RateLimit', 'RateLimit-Policy'] as const) : []),
      ...(op.route === '/seckill' && n !== 429 ? (['Idempotent-Replayed'] as const) : []),
    ];
    responses[status] = { description, headers: withId(extra), content: problemJson };
  }
  responses.default = {
    description: 'any other problem (404 no such route, 500 a bug): RFC 9457 problem+json',
    headers: withId(),
    content: problemJson,
  };
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    ...(op.security && { security: op.security }),
    ...(op.parameters && { parameters: op.parameters }),
    ...(op.body && {
      requestBody: { required: op.body.required, content: json(op.body.schema) },
    }),
    responses,
  };
}

export function openApiDocument(): Record<string, unknown> {
  const requests: SchemaName[] = [
    'PurchaseRequest',
    'PayRequest',
    'PaymentNotification',
    'SeedRequest',
    'LoginRequest',
  ];
  const schemas = Object.fromEntries(
    Object.entries(SCHEMAS).map(([name, s]) => [
      name,
      jsonSchema(s, requests.includes(name as SchemaName) ? 'input' : 'output'),
    ]),
  );
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    (paths[openApiPath(op.route)] ??= {})[op.method] = operation(op);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'seckill',
      version: '1.0.0',
      description:
        'Flash-sale backend: exact stock over Redis segments, orders persisted to PostgreSQL. Errors are RFC 9457 problem+json. Every answer carries X-Request-Id.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      { url: '/', description: 'this server' },
      { url: 'http://127.0.0.1:3000', description: '`npm start` on this machine' },
    ],
    tags: TAGS,
    components: {
      schemas,
      headers: HEADERS,
      securitySchemes: {
        shopperJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256, sub = shopper)' },
        devShopper: {
          type: 'apiKey',
          in: 'header',
          name: 'X-User-Id',
          description: 'AUTH_MODE=dev only',
        },
        admin: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
        adminSession: {
          type: 'apiKey',
          in: 'cookie',
          name: 'seckill_admin',
          description: 'the session POST /admin/dashboard/login opens',
        },
        webhookSignature: { type: 'apiKey', in: 'header', name: 'Seckill-Signature' },
        standardWebhook: {
          type: 'apiKey',
          in: 'header',
          name: 'webhook-signature',
          description: 'Standard Webhooks: with webhook-id and webhook-timestamp',
        },
      },
    },
    paths,
  };
}

export function mountOpenApi(router: IRouter): void {
  let text: string | undefined;
  router.get('/openapi.json', (_req, res) => {
    text ??= JSON.stringify(openApiDocument());
    res.type('application/json').send(text);
  });
  mountApiReference(router);
}
