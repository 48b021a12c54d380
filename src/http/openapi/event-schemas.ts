/**
 * The answers of the order feed and the events (GET /admin/orders, GET /admin/events, webhook
 * deliveries), as zod schemas for the OpenAPI document (components.ts).
 */
import { z } from 'zod';
import { EVENT_SOURCE, EVENT_TYPES } from '../../events/index.js';
import { orderView } from './schemas.js';

export const orderPage = z.strictObject({
  orders: z.array(orderView),
  next: z
    .string()
    .nullable()
    .describe('an opaque cursor: pass it as `after` for the next page; null on the last one'),
});

/** An order event: a CloudEvents 1.0 envelope (structured JSON), the same in every delivery. */
export const cloudEvent = z.strictObject({
  specversion: z.literal('1.0'),
  id: z.string().describe("unique per event: a webhook delivery's webhook-id; dedupe on it"),
  source: z.literal(EVENT_SOURCE),
  type: z.enum(EVENT_TYPES),
  subject: z.uuid().describe('the order id'),
  time: z.iso.datetime({ offset: true }).describe('when the change was committed'),
  datacontenttype: z.literal('application/json'),
  orderversion: z
    .number()
    .int()
    .min(1)
    .describe("extension attribute: the order's version this event made (per order, never back)"),
  data: z.looseObject({ orderId: z.uuid(), status: z.string(), version: z.number().int() }),
});

export const eventPage = z.strictObject({
  events: z.array(cloudEvent).describe('in commit order'),
  next: z
    .string()
    .describe(
      'an opaque cursor: pass it as `after` to resume after the last event (the same if none); never null (a tail)',
    ),
});

const iso = z.iso.datetime({ offset: true });

/** A webhook endpoint; `secret` only in the answers of its registration and of a rotation. */
export const webhookEndpoint = z.strictObject({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(EVENT_TYPES)),
  status: z.enum(['active', 'disabled']),
  disabledReason: z.string().optional().describe('an admin, or the receiver answered 410'),
  disabledAt: iso.optional(),
  createdAt: iso,
  pending: z.number().int().min(0).optional().describe('orders with events not yet acknowledged'),
  deadLetters: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('orders whose delivery is dead-lettered'),
  oldestPendingSeconds: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('age of the oldest event not yet acknowledged (0: none)'),
  secret: z
    .string()
    .optional()
    .describe('whsec_...: verify deliveries with it (Standard Webhooks); shown this once'),
});

export const webhookEndpoints = z.strictObject({ endpoints: z.array(webhookEndpoint) });

export const deadLetters = z.strictObject({
  deadLetters: z.array(
    z.strictObject({
      orderId: z.uuid(),
      eventId: z.string(),
      type: z.enum(EVENT_TYPES),
      version: z.number().int().min(1),
      cursor: z.string().describe('replay { from: cursor } sends it and what follows again'),
      events: z
        .number()
        .int()
        .min(1)
        .describe("the order's events held behind it, itself included"),
      attempts: z.number().int().min(0),
      error: z.string().nullable().describe("the last attempt's failure"),
      deadAt: iso,
    }),
  ),
});

export const replayAccepted = z.strictObject({
  orders: z.number().int().min(0).describe('orders whose events after the cursor are due again'),
});

export const retryAccepted = z.strictObject({
  lanes: z
    .number()
    .int()
    .min(0)
    .describe(
      'orders (lanes) that were waiting for their next attempt, now tried (Retry-After kept)',
    ),
});
