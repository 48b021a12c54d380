/** The variables of the payment provider's webhooks (docs/payments.md). Part of env.ts's schema. */
import { z } from 'zod';

export const paymentsEnv = {
  PAYMENT_WEBHOOK_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .optional()
    .describe(
      'HMAC-SHA256 key of `POST /payments/webhook` (both formats; `whsec_...`: Standard Webhooks base64), at least 32 characters; unset: the webhook answers 503; `up` keeps one in `DATA_DIR/payment-webhook-secret`',
    ),
  PAYMENT_WEBHOOK_TOLERANCE_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(3_600)
    .default(300)
    .describe("how far a webhook's signed timestamp may be from now (its replay window)"),
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(
      /^whsec_[A-Za-z0-9+/=_-]{16,}$/,
      "must be a Stripe endpoint's signing secret (whsec_...)",
    )
    .optional()
    .describe(
      'the signing secret (`whsec_...`) of the Stripe endpoint pointed at `POST /payments/stripe`; unset: that route answers `503` ([payments.md](payments.md#stripe))',
    ),
};
