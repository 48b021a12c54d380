/** Why admission refused a request: a value, never an HTTP error (http/ maps each code). */
import type { RateLimit } from '../../config/index.js';
import type { RateDecision } from '../../access/index.js';

/** The tightest limit's state after a request passed: the RateLimit headers. */
export interface RateState {
  limits: RateLimit[];
  tightest: { limit: RateLimit; decision: RateDecision };
}

/**
 * Why admission refused a request, by code; HTTP maps each code to its answer
 * (http/admission-problems.ts). `retryAfterSeconds` and `rate` become headers.
 */
export interface AdmissionRefusal {
  code:
    | 'rate-limited'
    | 'invalid-sale-token'
    | 'sale-tokens-disabled'
    | 'no-sale-token-needed'
    | 'unknown-product'
    | 'too-early'
    | 'ended'
    | 'waiting-room'
    | 'challenge-required'
    | 'challenge-invalid'
    | 'challenge-expired'
    | 'challenge-foreign'
    | 'challenge-replayed'
    | 'challenge-too-soon'
    | 'challenge-spaced'
    | 'challenge-unverified'
    | 'no-challenge-needed';
  detail: string;
  retryAfterSeconds?: number;
  /** the limits' state of a rate-limited request */
  rate?: RateState;
}

/** A refusal value; `retryAfterSeconds` only when given. */
export const refusal = (
  code: AdmissionRefusal['code'],
  detail: string,
  retryAfterSeconds?: number,
): AdmissionRefusal => ({
  code,
  detail,
  ...(retryAfterSeconds !== undefined && { retryAfterSeconds }),
});
