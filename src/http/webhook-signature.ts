/**
 * The payment provider's signature on `POST /payments/webhook`:
 *
 *   Seckill-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">
 *
 * keyed with PAYMENT_WEBHOOK_SECRET, compared in constant time, and refused when `t` is further
 * from now than PAYMENT_WEBHOOK_TOLERANCE_S (a captured request replayed later). Several v1
 * values may be sent (a secret being rotated); one match is enough.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ProblemError } from '../errors.js';

export const SIGNATURE_HEADER = 'seckill-signature';

const refused = (code: string, title: string, detail: string) =>
  new ProblemError({ status: 401, code, title, detail });

/** The header value for `body` signed at `t` (the provider's side: tests, load tests, docs). */
export function signWebhook(body: string | Buffer, secret: string, t = nowSeconds()): string {
  return `t=${t},v1=${hmac(secret, t, body)}`;
}

const nowSeconds = () => Math.floor(Date.now() / 1_000);

function hmac(secret: string, t: number | string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

/** @throws ProblemError 401 when the signature is missing, malformed, wrong or out of date. */
export function verifyWebhook(
  header: string | undefined,
  body: Buffer,
  opts: { secret: string; toleranceSeconds: number; now?: number },
): void {
  if (!header) {
    throw refused('invalid-signature', 'Invalid signature', `send the ${SIGNATURE_HEADER} header`);
  }
  let t: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (k === 't') t = v;
    else if (k === 'v1' && v) signatures.push(v);
  }
  if (!t || !/^\d{1,12}$/.test(t) || signatures.length === 0) {
    throw refused(
      'invalid-signature',
      'Invalid signature',
      `${SIGNATURE_HEADER} must be t=<unix seconds>,v1=<hex HMAC-SHA256>`,
    );
  }
  const age = Math.abs((opts.now ?? nowSeconds()) - Number(t));
  if (age > opts.toleranceSeconds) {
    throw refused(
      'stale-signature',
      'Signature out of date',
      `the signed timestamp is ${age} s from now; at most ${opts.toleranceSeconds} s is accepted`,
    );
  }
  const expected = Buffer.from(hmac(opts.secret, t, body), 'hex');
  const match = signatures.some((s) => {
    const given = Buffer.from(s, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!match) {
    throw refused(
      'invalid-signature',
      'Invalid signature',
      'the signature does not match the body',
    );
  }
}
