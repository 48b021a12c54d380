/**
 * The rate-limit headers of an answer (IETF httpapi draft `RateLimit` and `RateLimit-Policy`),
 * from the state admission returns: the tightest limit's remaining cells and reset, and the
 * policy of every limit applied.
 */
import type { RateLimit } from '../config/index.js';
import type { RateState } from '../services/index.js';

/** The `RateLimit-Policy` of each set of limits: the same for every request, so written once. */
const policies = new WeakMap<readonly RateLimit[], string>();

function policyOf(limits: readonly RateLimit[]): string {
  let policy = policies.get(limits);
  if (policy === undefined) {
    policy = limits
      .map(
        (l) => `"${l.name}";q=${l.burst};w=${Math.ceil((l.periodMs * l.burst) / l.rate / 1_000)}`,
      )
      .join(', ');
    policies.set(limits, policy);
  }
  return policy;
}

/** `RateLimit-Policy` and `RateLimit` (IETF httpapi draft) of the limits applied. */
export function rateLimitHeaders(state: RateState): Record<string, string> {
  const { limit, decision } = state.tightest;
  return {
    'RateLimit-Policy': policyOf(state.limits),
    RateLimit: `"${limit.name}";r=${decision.remaining};t=${Math.ceil(decision.resetMs / 1_000)}`,
  };
}
