/** The order feed's operations (docs/events.md#the-feed), part of api-operations.ts's table. */
import { ADMIN, ADMIN_REFUSALS, type Operation } from './api-components.js';

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
        enum: ['persisted', 'awaiting_payment', 'paid', 'cancelled', 'expired'],
      }),
      query('updatedSince', 'only orders whose state changed at or after (ISO 8601)', {
        type: 'string',
        format: 'date-time',
      }),
      query('after', "the page before's `next`", { type: 'string', format: 'uuid' }),
      limit,
    ],
    ok: { 200: ['OrderPage', 'a page (next: null on the last)'] },
    problems: { 400: 'bad query', ...ADMIN_REFUSALS },
    store: true,
  },
  {
    method: 'get',
    route: '/admin/events',
    operationId: 'listEvents',
    tag: 'admin',
    summary: 'Order events in commit order after a cursor (the same events as the webhooks)',
    security: ADMIN,
    parameters: [
      query('after', 'a `next` of an earlier page; left out: from the oldest kept', {
        type: 'string',
      }),
      limit,
    ],
    ok: { 200: ['EventPage', 'the events after the cursor, and the cursor after them'] },
    problems: {
      400: 'bad query',
      ...ADMIN_REFUSALS,
      410: 'the cursor is older than the retention (EVENT_RETENTION_HOURS)',
    },
    store: true,
  },
];
