/**
 * The parts of the OpenAPI document every operation shares: the named schemas (the zod schemas that
 * validate requests, and the answer schemas of schemas.ts), response headers, security, tags,
 * and the shape of one operation (operations.ts lists them; document.ts writes the document).
 */
import { pushRequest, seedRequest } from '../../services/index.js';
import * as events from './event-schemas.js';
import * as answers from './schemas.js';
import * as drop from './drop-schemas.js';
import * as draw from './draw-schemas.js';
import * as fairness from './fairness-schemas.js';
import { paceBody, unitsBody } from '../routes/admin-drop.js';
import { loginBody } from '../routes/dashboard.js';
import { payBody } from '../routes/orders.js';
import { noticeBody } from '../routes/payment-notices.js';
import { endpointBody, replayBody } from '../routes/admin-webhooks.js';
import { purchaseBody } from '../handlers/seckill.js';
import { stripeEvent } from '../routes/stripe-notices.js';

export const SCHEMAS = {
  Problem: answers.problem,
  PurchaseRequest: purchaseBody,
  PurchaseAccepted: answers.purchaseAccepted,
  Order: answers.orderView,
  PayRequest: payBody,
  PaymentIntent: answers.paymentIntent,
  PaymentNotification: noticeBody,
  StripeEvent: stripeEvent,
  StripeAnswer: answers.stripeAnswer,
  WebhookAck: answers.webhookAck,
  Product: answers.productPublic,
  SaleToken: answers.saleToken,
  QueuePlace: answers.queuePlace,
  PushSubscriptionRequest: pushRequest,
  Challenge: fairness.challenge,
  FairnessReport: fairness.fairnessReport,
  SeedRequest: seedRequest,
  SeedResult: answers.seedResult,
  AdminProduct: answers.adminProduct,
  ReconcileReport: answers.reconcileReport,
  KeyRefresh: answers.keyRefresh,
  Health: answers.health,
  Ready: answers.ready,
  LoginRequest: loginBody,
  OrderPage: events.orderPage,
  EventPage: events.eventPage,
  CloudEvent: events.cloudEvent,
  AuditPage: drop.auditPage,
  WebhookEndpointRequest: endpointBody,
  WebhookEndpoint: events.webhookEndpoint,
  WebhookEndpoints: events.webhookEndpoints,
  ReplayRequest: replayBody,
  ReplayAccepted: events.replayAccepted,
  RetryAccepted: events.retryAccepted,
  DeadLetters: events.deadLetters,
  DropResult: drop.dropResult,
  UnitsRequest: unitsBody,
  PaceRequest: paceBody,
  DrawEntry: draw.drawEntry,
  DrawWithdrawn: draw.drawWithdrawn,
  DrawEntryView: draw.drawEntryView,
  DrawTranscript: draw.drawTranscript,
  DrawEntriesPage: draw.drawEntriesPage,
} as const;

export type SchemaName = keyof typeof SCHEMAS;

export const idParam = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

/** Who acts, as the audit log records a change (X-Operator). */
export const OPERATOR_HEADER = {
  name: 'X-Operator',
  in: 'header',
  required: false,
  description: 'who acts, as the audit log records it (1-64 letters, digits, spaces, . _ @ -)',
  schema: { type: 'string', maxLength: 64 },
};

export type Security = Array<Record<string, string[]>>;
export const SHOPPER: Security = [{ shopperJwt: [] }, { devShopper: [] }];
export const ADMIN: Security = [{ admin: [] }];
export const ADMIN_OR_SESSION: Security = [{ admin: [] }, { adminSession: [] }];

// what an admin route answers a caller without the right token (or after too many wrong ones)
export const ADMIN_REFUSALS = {
  401: 'no token',
  403: 'wrong token, or a browser request another site or origin started (Sec-Fetch-Site)',
  429: 'too many wrong admin tokens from this address',
} as const;
export const SESSION_REFUSALS = {
  401: 'no token or session',
  403: 'wrong token, or a browser request another site or origin started (Sec-Fetch-Site)',
} as const;
/** What the admin surface answers a browser request another site or origin started. */
export const CROSS_SITE_REFUSAL = {
  403: 'a browser request another site or origin started (Sec-Fetch-Site), other than a link followed',
} as const;

/** Response headers, each defined once (components.headers) and referenced per answer. */
export const HEADERS = {
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
  Location: {
    description: 'what was made: the order of a purchase, a registered webhook endpoint',
    schema: { type: 'string' },
  },
  Link: {
    description:
      'the next page (RFC 8288): `<url>; rel="next"`, the request\'s filters kept and `after` set to `next`; ' +
      'absent when `next` is null',
    schema: { type: 'string' },
  },
} as const;
export type HeaderName = keyof typeof HEADERS;

export type Media =
  | SchemaName
  | 'html'
  | 'text'
  | 'javascript'
  | 'asset'
  | 'event-stream'
  | 'empty'
  /** a draw's frozen list: a JSON page, or NDJSON (?format=ndjson) */
  | 'draw-entries';

/**
 * One operation of the API: the route the app mounts (Express path form) and what it answers.
 * The document's paths are generated from this table; test/http/openapi.test.ts checks that the app
 * mounts exactly these routes and answers only what they say.
 */
export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
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

export const TAGS = [
  { name: 'shop', description: 'buying: the hot path' },
  { name: 'orders', description: "a buyer's orders" },
  { name: 'payments', description: 'payment intents and the provider webhook' },
  { name: 'admin', description: 'seeding, inspecting and reconciling sales (ADMIN_TOKEN)' },
  { name: 'dashboard', description: 'the live dashboard and Bull Board (admin session or token)' },
  { name: 'probes', description: 'liveness, readiness and metrics' },
  { name: 'meta', description: 'this document and its reference page' },
];
