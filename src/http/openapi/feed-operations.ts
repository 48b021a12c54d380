/** The feed's operations (docs/events.md#the-feed), part of operations.ts's table. */
import { ROW_STATUS } from '../../services/index.js';
import { ADMIN, ADMIN_REFUSALS, idParam, OPERATOR_HEADER, type Operation } from './components.js';

const endpoint = idParam('id', 'webhook endpoint id (ep_...)');
const UNKNOWN = { 404: 'no such endpoint' } as const;

const query = (name: string, description: string, schema: Record<string, unknown>) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

const limit = query('limit', 'page size (default 100)', {
  type: 'integer',
  minimum: 1,
  maximum: 1000,
});

export const FEED_OPERATIONS: Operation[] = [
  {
    method: 'get',
    route: '/admin/orders',
    operationId: 'listOrders',
    tag: 'admin',
    summary: 'Orders, filtered, a page at a time by order id (keyset: stable under writes)',
    security: ADMIN,
    parameters: [
      query('product', 'only this product', { type: 'string' }),
      query('status', 'only orders in this status', {
        enum: Object.keys(ROW_STATUS),
      }),
      query('updatedSince', 'only orders whose state changed at or after (ISO 8601)', {
        type: 'string',
        format: 'date-time',
      }),
      query('after', "the page before's `next` (an opaque cursor)", { type: 'string' }),
      limit,
    ],
    ok: { 200: ['OrderPage', 'a page (next: null on the last)', ['Link']] },
    problems: { 400: 'bad query', ...ADMIN_REFUSALS },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/events',
    operationId: 'listEvents',
    tag: 'admin',
    summary:
      "Events in commit order after a cursor: orders', and products' (the same events as the webhooks)",
    security: ADMIN,
    parameters: [
      query(
        'after',
        'a `next` of an earlier page (an opaque cursor); left out: from the oldest kept',
        {
          type: 'string',
        },
      ),
      limit,
    ],
    ok: {
      200: ['EventPage', 'the events after the cursor, and the cursor after them', ['Link']],
    },
    problems: {
      400: 'bad query',
      ...ADMIN_REFUSALS,
      410: 'the cursor is older than the retention (EVENT_RETENTION_HOURS)',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/admin/webhook-endpoints',
    operationId: 'registerWebhookEndpoint',
    tag: 'admin',
    summary: 'Register a receiver of events: its whsec_ secret is in this answer only',
    security: ADMIN,
    parameters: [OPERATOR_HEADER],
    body: { schema: 'WebhookEndpointRequest', required: true },
    ok: { 201: ['WebhookEndpoint', 'registered, with its secret', ['Location']] },
    problems: {
      400: 'bad body or X-Operator',
      ...ADMIN_REFUSALS,
      422: 'the URL is refused: not https (nor an allowed http host), private, credentials',
    },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/webhook-endpoints',
    operationId: 'listWebhookEndpoints',
    tag: 'admin',
    summary: 'Every webhook endpoint with its backlog (no secrets)',
    security: ADMIN,
    ok: { 200: ['WebhookEndpoints', 'the endpoints'] },
    problems: ADMIN_REFUSALS,
    store: true,
  },
  ...(['disable', 'enable'] as const).map((action): Operation => ({
    method: 'post',
    route: `/admin/webhook-endpoints/:id/${action}`,
    operationId: `${action}WebhookEndpoint`,
    tag: 'admin',
    summary:
      action === 'disable'
        ? 'Stop delivering to an endpoint (its events wait)'
        : 'Deliver to an endpoint again (after a disable or a 410): what waited is sent',
    security: ADMIN,
    parameters: [endpoint, OPERATOR_HEADER],
    ok: { 200: ['WebhookEndpoint', 'the endpoint'] },
    problems: { 400: 'bad X-Operator', ...ADMIN_REFUSALS, ...UNKNOWN },
    store: true,
  })),
  {
    method: 'post',
    route: '/admin/webhook-endpoints/:id/rotate',
    operationId: 'rotateWebhookSecret',
    tag: 'admin',
    summary: 'A new secret (in this answer only); the old one keeps signing for 24 h',
    security: ADMIN,
    parameters: [endpoint, OPERATOR_HEADER],
    ok: { 200: ['WebhookEndpoint', 'the endpoint, with its new secret'] },
    problems: { 400: 'bad X-Operator', ...ADMIN_REFUSALS, ...UNKNOWN },
    store: true,
  },
  {
    method: 'post',
    route: '/admin/webhook-endpoints/:id/replay',
    operationId: 'replayWebhookEvents',
    tag: 'admin',
    summary: "Deliver every event after a cursor again (same ids, each subject's in version order)",
    security: ADMIN,
    parameters: [endpoint, OPERATOR_HEADER],
    body: { schema: 'ReplayRequest', required: true },
    ok: { 202: ['ReplayAccepted', 'the lanes due again; their dead letters live again'] },
    problems: { 400: 'bad body or X-Operator', ...ADMIN_REFUSALS, ...UNKNOWN },
    store: true,
  },
  {
    method: 'post',
    route: '/admin/webhook-endpoints/:id/retry',
    operationId: 'retryWebhookEndpoint',
    tag: 'admin',
    summary:
      "Try now every lane waiting for its next attempt (a receiver's Retry-After kept; a failure is not counted)",
    security: ADMIN,
    parameters: [endpoint],
    ok: { 202: ['RetryAccepted', 'the lanes brought forward'] },
    problems: {
      ...ADMIN_REFUSALS,
      ...UNKNOWN,
      409: 'the endpoint is disabled: enable it (what waited is then sent)',
    },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/webhook-endpoints/:id/dead-letters',
    operationId: 'listDeadLetters',
    tag: 'admin',
    summary: "An endpoint's dead letters: deliveries whose last retry failed",
    security: ADMIN,
    parameters: [endpoint, limit],
    ok: { 200: ['DeadLetters', 'newest first'] },
    problems: { 400: 'bad query', ...ADMIN_REFUSALS, ...UNKNOWN },
    store: true,
  },
];
