/** Payment providers' own notices (docs/payments.md#stripe), part of operations.ts's table. */
import type { Operation } from './components.js';

export const PROVIDER_OPERATIONS: Operation[] = [
  {
    method: 'post',
    route: '/payments/stripe',
    operationId: 'stripeWebhook',
    tag: 'payments',
    summary:
      "Stripe's payment_intent.succeeded (the order id in the PaymentIntent's metadata), charge.refunded and charge.dispute.*",
    security: [{ stripeSignature: [] }],
    body: { schema: 'StripeEvent', required: true },
    ok: {
      200: [
        'StripeAnswer',
        'the order, paid, refunded, disputed (or the same answer again); an event that changes nothing: { received, ignored }; one the order cannot take: { received, refused, order } (recorded)',
        ['Idempotent-Replayed'],
      ],
    },
    problems: {
      400: 'bad body',
      401: 'bad, stale or missing Stripe-Signature',
      503: 'STRIPE_WEBHOOK_SECRET not set',
    },
    store: true,
  },
];
