/** Payment providers' own webhooks (docs/payments.md#stripe), part of operations.ts's table. */
import type { Operation } from './components.js';

export const PROVIDER_OPERATIONS: Operation[] = [
  {
    method: 'post',
    route: '/payments/stripe',
    operationId: 'stripeWebhook',
    tag: 'payments',
    summary: "Stripe's payment_intent.succeeded (the order id in the PaymentIntent's metadata)",
    security: [{ stripeSignature: [] }],
    body: { schema: 'StripeEvent', required: true },
    ok: {
      200: [
        'StripeAnswer',
        'the order, paid (or the same answer again); another event: { received, ignored }',
        ['Idempotent-Replayed'],
      ],
    },
    problems: {
      400: 'bad body',
      401: 'bad, stale or missing Stripe-Signature',
      404: 'the order has no payment intent its buyer started',
      409: "cannot be paid (expired, cancelled, paid otherwise), payment id used, not the order's total",
      503: 'STRIPE_WEBHOOK_SECRET not set',
    },
    store: true,
  },
];
