/**
 * `GET /openapi.json`: the API as OpenAPI 3.1, written from the table of operations the app mounts
 * (operations.ts) and the zod schemas the routes validate requests with (zod's own JSON Schema
 * output, draft 2020-12, which OpenAPI 3.1 uses). What every operation shares is added here: the
 * X-Request-Id header, 413/415 where a body is read, 503 store-unavailable where a store is needed,
 * Retry-After and RateLimit headers, a default problem answer. test/http/openapi.test.ts holds the
 * table to the app both ways; `GET /docs` renders the document (reference.ts).
 */
import type { IRouter } from 'express';
import { z } from 'zod';
import {
  HEADERS,
  SCHEMAS,
  TAGS,
  type HeaderName,
  type Media,
  type Operation,
  type SchemaName,
} from './components.js';
import { OPERATIONS } from './operations.js';
import { mountApiReference } from './reference.js';
import { packageVersion } from '../../version.js';

export { OPERATIONS };

function jsonSchema(zodSchema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(zodSchema, {
    target: 'draft-2020-12',
    io,
  }) as Record<string, unknown>;
  return rest;
}

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: SchemaName) => ({ 'application/json': { schema: ref(name) } });
const problemJson = { 'application/problem+json': { schema: ref('Problem') } };

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
    case 'asset':
      return {
        'text/javascript': { schema: { type: 'string' } },
        'text/css': { schema: { type: 'string' } },
      };
    case 'event-stream':
      return { 'text/event-stream': { schema: { type: 'string' } } };
    case 'draw-entries':
      return {
        ...json('DrawEntriesPage'),
        'application/x-ndjson': { schema: { type: 'string', description: 'an entry id a line' } },
      };
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
    'PushSubscriptionRequest',
    'UnitsRequest',
    'PaceRequest',
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
      version: packageVersion(),
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
        shopperJwt: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT (HS256, or RS256 / ES256 / EdDSA by the JWKS; sub = shopper)',
        },
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
        stripeSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'Stripe-Signature',
          description: 't=<unix seconds>,v1=<hex HMAC-SHA256>, keyed with STRIPE_WEBHOOK_SECRET',
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
