/**
 * The answers of the order feed and the events (GET /admin/orders, GET /admin/events, webhook
 * deliveries), as zod schemas for the OpenAPI document (api-components.ts).
 */
import { z } from 'zod';
import { EVENT_SOURCE, EVENT_TYPES } from '../events/index.js';
import { orderView } from './api-schemas.js';

export const orderPage = z.strictObject({
  orders: z.array(orderView),
  next: z.string().nullable().describe('pass as `after` for the next page; null on the last one'),
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
  next: z.string().describe('pass as `after` to resume after the last event (the same if none)'),
});
