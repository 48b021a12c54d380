/**
 * The answers of the order feed and the events, orders' and products' (GET /admin/orders,
 * GET /admin/events, webhook deliveries), as zod schemas for the OpenAPI document (components.ts).
 */
import { z } from 'zod';
import { EVENT_FAMILIES, EVENT_SOURCE, EVENT_TYPES } from '../../events/index.js';
import { orderView } from './schemas.js';

export const orderPage = z.strictObject({
  orders: z.array(orderView),
  next: z
    .string()
    .nullable()
    .describe('an opaque cursor: pass it as `after` for the next page; null on the last one'),
});

const envelope = {
  specversion: z.literal('1.0'),
  time: z.iso.datetime({ offset: true }).describe('when the change was committed'),
  datacontenttype: z.literal('application/json'),
};

/** An order event: a CloudEvents 1.0 envelope (structured JSON), the same in every delivery. */
export const orderEvent = z.strictObject({
  specversion: envelope.specversion,
  id: z.string().describe("unique per event: a webhook delivery's webhook-id; dedupe on it"),
  source: z.literal(EVENT_SOURCE),
  type: z.enum(EVENT_FAMILIES.orders.types),
  subject: z.uuid().describe('the order id'),
  time: envelope.time,
  datacontenttype: envelope.datacontenttype,
  orderversion: z
    .number()
    .int()
    .min(1)
    .describe("extension attribute: the order's version this event made (per order, never back)"),
  data: z.looseObject({ orderId: z.uuid(), status: z.string(), version: z.number().int() }),
});

/** Every type that is not an order's: the families that publish product events list theirs. */
const productTypes: string[] = EVENT_TYPES.filter(
  (t) => !(EVENT_FAMILIES.orders.types as readonly string[]).includes(t),
);

/**
 * An event of a product that is not an order's (a draw's, a waiting room's): the same envelope,
 * its subject and sequence its producer's. Each family documents its types' `data`.
 */
export const productEvent = z.strictObject({
  specversion: envelope.specversion,
  id: z
    .string()
    .describe("`<type>:...`, unique per event: a webhook delivery's webhook-id; dedupe on it"),
  source: z
    .string()
    .regex(/^\/seckill\/[a-z][a-z0-9-]*$/)
    .describe('its family, e.g. /seckill/draws, /seckill/rooms'),
  type: (productTypes.length > 0
    ? z.enum(productTypes as [string, ...string[]])
    : z.string()
  ).describe('`<family>.<what>`'),
  subject: z
    .string()
    .describe(
      'what it is about, as its family names it (a product, an entry, a place); never a uuid',
    ),
  time: envelope.time,
  datacontenttype: envelope.datacontenttype,
  subjectsequence: z
    .number()
    .int()
    .min(1)
    .describe(
      "extension attribute: 1, 2, 3... per subject in the order its events were committed; order a subject's events by it (it may skip, never goes back)",
    ),
  productid: z.string().describe('extension attribute: the product the event is of'),
  data: z.record(z.string(), z.unknown()).describe('per type, documented by its family'),
});

/** An event of the feed and of a webhook delivery: an order's, or a product's. */
export const cloudEvent = z.union([orderEvent, productEvent]);

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
  pending: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('lanes (orders, other subjects) with events not yet acknowledged'),
  deadLetters: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('lanes (orders, other subjects) whose delivery is dead-lettered'),
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
      orderId: z.uuid().optional().describe("the order's id: a lane of an order's events only"),
      subject: z.string().describe("the order id, or the product event's subject"),
      eventId: z.string(),
      type: z.enum(EVENT_TYPES),
      version: z
        .number()
        .int()
        .min(1)
        .describe("the order's version, or the subject's sequence number"),
      cursor: z.string().describe('replay { from: cursor } sends it and what follows again'),
      events: z.number().int().min(1).describe("the lane's events held behind it, itself included"),
      attempts: z.number().int().min(0),
      error: z.string().nullable().describe("the last attempt's failure"),
      deadAt: iso,
    }),
  ),
});

export const replayAccepted = z.strictObject({
  orders: z.number().int().min(0).describe('orders whose events after the cursor are due again'),
  lanes: z
    .number()
    .int()
    .min(0)
    .describe('lanes whose events after the cursor are due again: the orders, and other subjects'),
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
