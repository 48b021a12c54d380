/**
 * The payment provider's signature on `POST /payments/webhook`, in either of two formats:
 *
 *   Seckill-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">
 *
 * keyed with PAYMENT_WEBHOOK_SECRET (several v1 values: a secret being rotated), or Standard
 * Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`), verified by the
 * `standardwebhooks` package; its key is the secret's base64 after `whsec_` when it has that
 * prefix (the spec's form), else the secret's bytes. Either way the signature is compared in
 * constant time, exactly as sent (no other encoding of it passes), and a timestamp further from
 * now than PAYMENT_WEBHOOK_TOLERANCE_S is refused (a captured request replayed later).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { ProblemError } from '../errors.js';

export const SIGNATURE_HEADER = 'seckill-signature';
export const STANDARD_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

const refused = (code: string, title: string, detail: string) =>
  new ProblemError({ status: 401, code, title, detail });
const invalid = (detail: string) => refused('invalid-signature', 'Invalid signature', detail);

const nowSeconds = () => Math.floor(Date.now() / 1_000);

function hmacHex(secret: string, timestamp: number | string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The Seckill-Signature value for `body` signed at `t` (the provider's side: tests, docs). */
export function signNotice(
  body: string | Buffer,
  secret: string,
  timestamp = nowSeconds(),
): string {
  return `t=${timestamp},v1=${hmacHex(secret, timestamp, body)}`;
}

const standardKey = (secret: string) =>
  secret.startsWith('whsec_') ? new Webhook(secret) : new Webhook(secret, { format: 'raw' });

/** Standard Webhooks headers for `body` (the provider's side: tests, load tests, docs). */
export function signStandardWebhook(
  webhookId: string,
  body: string,
  secret: string,
  signedAt = nowSeconds(),
): Record<(typeof STANDARD_HEADERS)[number], string> {
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(signedAt),
    'webhook-signature': standardKey(secret).sign(webhookId, new Date(signedAt * 1_000), body),
  };
}

export interface VerifyOptions {
  secret: string;
  toleranceSeconds: number;
  now?: number;
}

function checkAge(signedAt: string, opts: VerifyOptions): void {
  const age = Math.abs((opts.now ?? nowSeconds()) - Number(signedAt));
  if (age > opts.toleranceSeconds) {
    throw refused(
      'stale-signature',
      'Signature out of date',
      `the signed timestamp is ${age} s from now; at most ${opts.toleranceSeconds} s is accepted`,
    );
  }
}

/** A sane webhook-id: printable ASCII, bounded (it is stored as the dedupe key). */
const WEBHOOK_ID = /^[\x21-\x7e]{1,256}$/;

/**
 * Verifies the notice in whichever format it is signed.
 * @returns the Standard Webhooks `webhook-id` (the dedupe key), or undefined for Seckill-Signature
 * @throws ProblemError 401 when the signature is missing, malformed, wrong or out of date
 */
export function verifyNotice(
  headers: IncomingHttpHeaders,
  body: Buffer,
  opts: VerifyOptions,
): { webhookId?: string } {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  if (STANDARD_HEADERS.some((h) => one(h) !== undefined)) {
    const [id, t, signature] = STANDARD_HEADERS.map(one);
    if (!id || !t || !signature || !WEBHOOK_ID.test(id) || !/^\d{1,12}$/.test(t)) {
      throw invalid(`send all of ${STANDARD_HEADERS.join(', ')} (Standard Webhooks)`);
    }
    checkAge(t, opts);
    try {
      standardKey(opts.secret).verify(
        body,
        { 'webhook-id': id, 'webhook-timestamp': t, 'webhook-signature': signature },
        { jsonParse: false },
      );
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      if (/timestamp too (old|new)/.test(err.message)) {
        throw refused('stale-signature', 'Signature out of date', err.message);
      }
      throw invalid('the signature does not match the body');
    }
    return { webhookId: id };
  }
  if (!one(SIGNATURE_HEADER)) {
    throw invalid(`send the ${SIGNATURE_HEADER} header, or the Standard Webhooks headers`);
  }
  verifyTimestampedHmac(one(SIGNATURE_HEADER)!, body, opts, SIGNATURE_HEADER);
  return {};
}

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">[,v1=...]`: Seckill-Signature, and
 * Stripe-Signature (the same scheme; Stripe sends a v1 per active secret and may add v0 or other
 * schemes, which are ignored). One matching v1 is enough.
 */
export function verifyTimestampedHmac(
  header: string,
  body: Buffer,
  opts: VerifyOptions,
  name: string,
): void {
  // Strict: every part is `<key>=<value>`, the value everything after the one '=' (no empty
  // part, no second '=', one `t`); unknown keys (a future scheme) are allowed, as Stripe's are.
  let t: string | undefined;
  let times = 0;
  const signatures: string[] = [];
  const malformed = () => invalid(`${name} must be t=<unix seconds>,v1=<hex HMAC-SHA256>`);
  for (const raw of header.split(',')) {
    const part = /^\s*([a-z][a-z0-9]*)=([^=\s]+)\s*$/.exec(raw);
    if (!part) throw malformed();
    const [, k, v] = part;
    if (k === 't') [t, times] = [v, times + 1];
    else if (k === 'v1') signatures.push(v!);
  }
  if (times !== 1 || !/^\d{1,12}$/.test(t!) || signatures.length === 0) throw malformed();
  checkAge(t!, opts);
  // compared as text: lowercase hex exactly as the HMAC encodes it (no padding, case or trailing
  // junk that would decode to the same bytes)
  const expected = Buffer.from(hmacHex(opts.secret, t!, body));
  const match = signatures.some((s) => {
    const given = Buffer.from(s);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!match) throw invalid('the signature does not match the body');
}
