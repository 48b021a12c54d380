/**
 * Waiting-room polls per client address (RATE_LIMIT_POLL_IP), counted in this process's memory:
 * a poll answered from memory costs the store nothing, but a poll of a made-up shopper id costs a
 * read, so a client must not send them at will; and a refused poll must cost no Redis command.
 */
import { LocalRateLimiter } from '../../access/index.js';
import type { RateLimit } from '../../config/index.js';
import { checked, type AdmissionRefusal } from '../admission/index.js';

export class PollLimit {
  private readonly limiter: LocalRateLimiter | undefined;
  private readonly limits: RateLimit[];

  constructor(limit: RateLimit | undefined) {
    this.limiter = limit && new LocalRateLimiter(limit);
    this.limits = limit ? [limit] : [];
  }

  /**
   * One poll from the address `ip` reads (read only when polls are limited).
   * @returns the 'rate-limited' refusal, or undefined: the poll may go on
   */
  take(ip: () => string): AdmissionRefusal | undefined {
    const limiter = this.limiter;
    if (!limiter) return undefined;
    const decision = limiter.take(ip());
    if (decision.allowed) return undefined;
    return checked({ limits: this.limits, tightest: { limit: limiter.limit, decision } }).refusal;
  }
}
