/**
 * A widget challenge's answer (Turnstile, hCaptcha): the provider's siteverify endpoint decides,
 * then the token is single use here (its hash claimed with SET NX) and, for Turnstile, bound to
 * the identity through the widget's cdata.
 */
import { createHash } from 'node:crypto';
import type { ChallengeConfig } from '../../config/index.js';
import { refusal, type AdmissionRefusal } from './refusal.js';

const PROVIDER_URL = {
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
} as const;

/** The refusal of a request without the Challenge header the door asks. */
export const challengeRequired = (productId: string, kind: string) =>
  refusal(
    'challenge-required',
    kind === 'pow'
      ? `this door asks a proof of work: GET /products/${productId}/challenge, solve it, and send the payload as the Challenge header`
      : `this door asks a ${kind} challenge: send the widget's token as the Challenge header`,
  );

/** undefined when `token` is the provider's fresh answer for this shopper (and is claimed). */
export async function verifyCaptcha(
  deps: {
    config: ChallengeConfig;
    store: { claim(id: string, userId: string, ttlMs: number): Promise<boolean> };
  },
  kind: 'turnstile' | 'hcaptcha',
  secret: string,
  userId: string,
  ip: string,
  token: string | undefined,
): Promise<AdmissionRefusal | undefined> {
  const { config } = deps;
  if (!token) return challengeRequired('', kind);
  let answer: { success?: unknown; 'error-codes'?: unknown; cdata?: unknown };
  try {
    const res = await fetch(config.verifyUrl ?? PROVIDER_URL[kind], {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret, response: token, remoteip: ip }),
      signal: AbortSignal.timeout(5_000),
    });
    answer = (await res.json()) as typeof answer;
  } catch (err) {
    return refusal(
      'challenge-unverified',
      `the ${kind} verify endpoint did not answer: ${String(err)}`,
      5,
    );
  }
  const codes = Array.isArray(answer['error-codes']) ? answer['error-codes'].map(String) : [];
  if (answer.success !== true) {
    return codes.includes('timeout-or-duplicate') ||
      codes.includes('invalid-or-already-seen-response')
      ? refusal(
          'challenge-replayed',
          `the ${kind} token was used already or timed out: solve it again`,
        )
      : refusal(
          'challenge-invalid',
          `the ${kind} token was refused (${codes.join(', ') || 'no reason given'})`,
        );
  }
  if (typeof answer.cdata === 'string' && answer.cdata !== '' && answer.cdata !== userId) {
    return refusal('challenge-foreign', `the ${kind} token was solved for another shopper`);
  }
  const id = createHash('sha256').update(token).digest('base64url');
  if (!(await deps.store.claim(`${kind}:${id}`, userId, 10 * 60_000))) {
    return refusal('challenge-replayed', `this ${kind} token was answered already: solve it again`);
  }
  return undefined;
}
