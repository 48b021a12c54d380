/** The HTTP answer of each admission refusal: one table, as sale-problems.ts is for the sale. */
import { ProblemError } from '../errors.js';
import type { AdmissionRefusal } from '../services/index.js';
import { rateLimitHeaders } from './rate-limit-headers.js';

const HTTP: Record<AdmissionRefusal['code'], { status: number; title: string }> = {
  'rate-limited': { status: 429, title: 'Too many requests' },
  'invalid-sale-token': { status: 403, title: 'Sale token refused' },
  'sale-tokens-disabled': { status: 503, title: 'Sale tokens not configured' },
  // the client's mistake, not the server's: nothing to retry (so a 409, never a 503)
  'no-sale-token-needed': { status: 409, title: 'This sale needs no sale token' },
  'unknown-product': { status: 404, title: 'Unknown product' },
  'too-early': { status: 425, title: 'Sale tokens are not issued yet' },
  ended: { status: 410, title: 'Sale ended' },
  'waiting-room': { status: 403, title: 'Admission is through the waiting room' },
  'challenge-required': { status: 403, title: 'A challenge is required' },
  'challenge-invalid': { status: 403, title: 'Challenge refused' },
  'challenge-expired': { status: 403, title: 'Challenge expired' },
  'challenge-foreign': { status: 403, title: 'Challenge of another shopper or product' },
  'challenge-replayed': { status: 409, title: 'Challenge answered already' },
  'challenge-too-soon': { status: 425, title: 'Challenge answered before its floor' },
  'challenge-spaced': { status: 429, title: 'One challenge at a time for a flagged address' },
  'challenge-unverified': { status: 503, title: 'The challenge provider did not answer' },
  'no-challenge-needed': { status: 409, title: 'This door asks no challenge' },
};

export function admissionProblem(refusal: AdmissionRefusal): ProblemError {
  const { status, title } = HTTP[refusal.code];
  const headers = {
    ...(refusal.retryAfterSeconds !== undefined && {
      'Retry-After': String(refusal.retryAfterSeconds),
    }),
    ...(refusal.rate && rateLimitHeaders(refusal.rate)),
  };
  return new ProblemError({
    status,
    code: refusal.code,
    title,
    detail: refusal.detail,
    ...(Object.keys(headers).length > 0 && { headers }),
  });
}
