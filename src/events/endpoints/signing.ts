/**
 * Standard Webhooks signatures on every delivery: `webhook-id` (the event's id),
 * `webhook-timestamp` (unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`, keyed with the endpoint's `whsec_` secret), by the
 * `standardwebhooks` package, as this service verifies the notices it receives
 * (src/http/notice-signature.ts). During a rotation's grace both secrets sign: the header
 * carries both signatures, space-separated, and a receiver with either one verifies.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** `whsec_` + base64 of 32 random bytes (the spec asks 24 to 64). */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export function signDelivery(
  eventId: string,
  body: string,
  secrets: readonly string[],
  signedAt: Date,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(signedAt.getTime() / 1_000)),
    'webhook-signature': secrets
      .map((secret) => new Webhook(secret).sign(eventId, signedAt, body))
      .join(' '),
  };
}
