/** The variables of the payment provider's webhooks (docs/payments.md). Part of env.ts's schema. */
import { z } from 'zod';

export const paymentsEnv = {
  PAYMENT_WEBHOOK_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe('HMAC-SHA256 key of POST /payments/webhook; unset: the webhook is off (503)'),
  PAYMENT_WEBHOOK_TOLERANCE_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(3_600)
    .default(300)
    .describe("a webhook's signed timestamp may be this far from now (replay window)"),
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(
      /^whsec_[A-Za-z0-9+/=_-]{16,}$/,
      "must be a Stripe endpoint's signing secret (whsec_...)",
    )
    .optional()
    .describe(
      'signing secret of the Stripe endpoint pointed at POST /payments/stripe; unset: that route is off (503)',
    ),
};
