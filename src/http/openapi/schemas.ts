/**
 * The bodies the API answers with, as zod schemas: the OpenAPI document (document.ts) is generated
 * from these and from the request schemas the routes validate with, and test/http/openapi.test.ts
 * checks real answers against it.
 */
import { z } from 'zod';

const iso = z.iso.datetime({ offset: true });

/** RFC 9457 problem details; some carry more members (orderId, errors, order, checks). */
export const problem = z.looseObject({
  type: z.string().describe('urn:seckill:problem:<code>'),
  title: z.string(),
  status: z.number().int().min(400).max(599),
  detail: z.string().optional(),
  instance: z.string(),
  requestId: z.string().optional(),
});

export const purchaseAccepted = z.strictObject({
  orderId: z.uuid(),
  status: z.literal('pending'),
  productId: z.string(),
  quantity: z.number().int().min(1),
});

/** An amount in the currency's minor unit, and the currency. */
export const price = z.strictObject({
  amount: z.number().int().min(0).describe("in the currency's minor unit (1999: 19.99 EUR)"),
  currency: z.string().describe('ISO 4217'),
});

export const orderView = z.strictObject({
  orderId: z.uuid(),
  status: z.enum([
    'pending',
    'persisted',
    'awaiting_payment',
    'paid',
    'cancelled',
    'expired',
    'refunded',
    'disputed',
    'dispute_lost',
  ]),
  productId: z.string(),
  epoch: z.number().int().min(1).optional().describe('the sale epoch it was sold in'),
  userId: z.string(),
  quantity: z.number().int().min(1).optional(),
  deductedAt: iso.optional(),
  persistedAt: iso.optional(),
  payBy: iso.optional(),
  paymentId: z
    .string()
    .optional()
    .describe(
      "paid: the payment provider's id of the payment (Stripe: the PaymentIntent's pi_...)",
    ),
  closedAt: iso.optional(),
  restockedAt: iso.optional().describe('its units back on sale (cancelled, expired, refunded)'),
  refundedAt: iso.optional(),
  disputedAt: iso.optional().describe("a dispute of its payment opened (the buyer's bank)"),
  disputeClosedAt: iso
    .optional()
    .describe('the dispute won (the order is paid again) or lost (dispute_lost)'),
  price: price.optional().describe("a priced sale's unit price when the order was sold"),
  total: price.optional().describe('price * quantity: what the buyer pays'),
  version: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("1 when persisted, +1 by each change of state: the order events' orderversion"),
  updatedAt: iso.optional().describe('its last change of state'),
  entryId: z
    .string()
    .optional()
    .describe("bought with a draw's purchase right: the entry's id (the draw's transcript)"),
  rank: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("bought in a draw: the entry's rank (1 the first drawn: winners, then waitlist)"),
});

export const paymentIntent = z.strictObject({
  paymentIntentId: z.string().describe('what the payment provider charges and names back'),
  orderId: z.uuid(),
  quantity: z.number().int().min(1),
  expiresAt: iso.describe("the order's payBy: it cannot be paid later"),
  status: z.literal('requires_payment'),
  amount: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("a priced order's total, in the currency's minor unit: what the provider charges"),
  currency: z.string().optional().describe('ISO 4217, with amount'),
});

/** A waiting room as a storefront sees it: its state and public settings. */
export const publicRoom = z.strictObject({
  state: z
    .enum(['lobby', 'open', 'paused', 'sold-out', 'ended'])
    .describe(
      'lobby: before the opening (joins are shuffled into the line at it); open: admitting in order; paused by the shop',
    ),
  admitPerSecond: z.number().int().min(1),
  maxActive: z.number().int().min(1),
  admittedForSeconds: z.number().int().min(1),
  pageUrl: z
    .string()
    .describe(
      'the queue page this service serves for the product, a path on this API (/queue/<id>): send shoppers there (docs/queue-page.md)',
    ),
});

export const productPublic = z.strictObject({
  productId: z.string(),
  status: z.enum(['upcoming', 'live', 'paused', 'sold out', 'ended']),
  remaining: z.number().int().min(0),
  total: z.number().int().min(0),
  limitPerUser: z.number().int().min(1),
  payWithinSeconds: z.number().int().min(1).nullable(),
  startsAt: iso.nullable(),
  endsAt: iso.nullable(),
  price: price.nullable().describe('the unit price; null when the sale is unpriced'),
  paused: z.boolean().describe('the shop paused the sale: purchases wait for it to resume'),
  waitingRoom: publicRoom
    .nullable()
    .describe('null: sold without a waiting room (POST /seckill); else join it first'),
  challenge: z
    .strictObject({
      kind: z.enum(['pow', 'turnstile', 'hcaptcha']),
      siteKey: z
        .string()
        .nullable()
        .describe("turnstile, hcaptcha: the widget's site key; pow: null"),
    })
    .nullable()
    .describe(
      "the door's challenge (the product's own, else the deployment's CHALLENGE): a join, a sale token and a draw's entry send its answer as the Challenge header (pow: GET /products/:id/challenge); null: none",
    ),
});

export const saleToken = z.strictObject({
  token: z.string(),
  expiresAt: iso,
  startsAt: iso.nullable(),
});

const seconds = z.number().int().min(0);

/** A shopper's place in a waiting room (docs/waiting-room.md). */
export const queuePlace = z.strictObject({
  state: z
    .enum(['waiting', 'paused', 'admitted', 'expired', 'sold-out', 'ended'])
    .describe(
      'paused: the shop paused the sale, the place is kept; expired: the admission ran out before a purchase',
    ),
  position: z
    .number()
    .int()
    .min(0)
    .nullable()
    .describe('1 = next to be admitted, 0 once admitted; null before the opening and when over'),
  aheadOfYou: z.number().int().min(0).nullable(),
  estimatedWaitSeconds: z.strictObject({ p50: seconds, p90: seconds }).nullable(),
  pollAfterSeconds: z
    .number()
    .int()
    .min(1)
    .nullable()
    .describe('poll again after this long (jittered; also Retry-After); null: nothing to wait for'),
  saleToken: z
    .string()
    .optional()
    .describe('once admitted: send it as Sale-Token on POST /seckill'),
  saleTokenExpiresAt: iso.optional(),
  final: z
    .boolean()
    .optional()
    .describe('sold-out: true when no unit can come back (no unpaid order is still open)'),
  detail: z.string().optional().describe('paused, expired, sold-out: what it means, in words'),
});

export const seedResult = z.strictObject({
  productId: z.string(),
  epoch: z.number().int().min(1),
  segments: z.array(z.number().int().min(0)).describe('units seeded into each segment'),
  carried: z
    .number()
    .int()
    .min(0)
    .describe(
      "shoppers whose earlier purchases count against this sale's limit (0: none, or ?discard=purchase-counts)",
    ),
});

export const adminProduct = z.looseObject({
  productId: z.string(),
  epoch: z.number().int(),
  total: z.number().int(),
  remaining: z.number().int(),
  sold: z.number().int(),
  returned: z.number().int(),
  status: z.enum(['upcoming', 'live', 'paused', 'sold out', 'ended']),
  segments: z.array(
    z.looseObject({
      segment: z.number().int(),
      stock: z.number().int(),
      sold: z.number().int(),
      pending: z.number().int(),
      persisted: z.number().int(),
    }),
  ),
});

export const reconcileReport = z.looseObject({
  productId: z.string(),
  epoch: z.number().int(),
  total: z.number().int().describe('units on sale: seeded + added - taken'),
  seeded: z.number().int().describe("the epoch's seeded units"),
  added: z.number().int().min(0).describe('units operators put on sale during the drop'),
  taken: z.number().int().min(0).describe('unsold units operators took off sale'),
  remaining: z.number().int(),
  pending: z.number().int(),
  persisted: z.number().int(),
  returned: z.number().int(),
  held: z.strictObject({
    final: z.number().int(),
    awaitingPayment: z.number().int(),
    paid: z.number().int(),
    returning: z
      .number()
      .int()
      .describe('cancelled, expired or refunded (while the sale ran), the return not made yet'),
    refunded: z.number().int().describe("refunded after the sale's end: the units stay sold"),
    disputed: z.number().int(),
    disputeLost: z.number().int(),
  }),
  live: z.boolean(),
  problems: z.array(z.string()),
  ok: z.boolean(),
});

export const health = z.strictObject({ status: z.literal('ok') });

export const ready = z.strictObject({
  status: z.literal('ready'),
  checks: z.record(z.string(), z.enum(['up', 'degraded', 'down'])),
  detail: z.string().optional(),
});

export const webhookAck = z.strictObject({ received: z.literal(true), ignored: z.string() });

/** A notice the order cannot take, acknowledged (Stripe retries anything else) and recorded. */
export const noticeRefused = z.strictObject({
  received: z.literal(true),
  refused: z.strictObject({
    code: z
      .string()
      .describe(
        'the problem code POST /payments/webhook would answer: amount-mismatch, order-expired, order-disputed, partial-refund...',
      ),
    detail: z.string(),
  }),
  order: orderView.optional(),
});

/**
 * Stripe's endpoint answers the order, acknowledges an event that changes nothing, or a refused
 * one (recorded in payment_refusals for a person).
 */
export const stripeAnswer = z.union([orderView, webhookAck, noticeRefused]);

/** POST /admin/jwks/refresh's answer. */
export const keyRefresh = z.strictObject({
  kids: z
    .array(z.string())
    .describe("the key ids this process holds now: the provider's set as just fetched"),
  processes: z
    .number()
    .int()
    .min(0)
    .describe('API processes that heard the notice (this one included); each fetches the set'),
});
