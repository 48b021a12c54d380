import { z } from 'zod';

/** A rate limit as configured (RATE_LIMIT_USER, RATE_LIMIT_IP): `<n>/s` or `<n>/m`, a burst. */
export interface RateLimit {
  /** the policy's name in the RateLimit headers (e.g. "user", "ip") */
  name: string;
  /** requests per period */
  rate: number;
  periodMs: number;
  /** requests at once from an idle start (default: rate) */
  burst: number;
}

/**
 * `5/s`, `300/m`: a limit's rate and period.
 * @throws Error naming the expected form
 */
export function parseRate(text: string): { rate: number; periodMs: number } {
  const m = /^([1-9]\d{0,8})\/(s|m)$/.exec(text);
  if (!m || Number(m[1]) < 1) throw new Error('must be <n>/s or <n>/m with n >= 1');
  return { rate: Number(m[1]), periodMs: m[2] === 's' ? 1_000 : 60_000 };
}

/**
 * The environment that turns every per-shopper and per-address limit off: a benchmark or a chaos
 * run sends a crowd from one address (127.0.0.1) and measures the sale, not the limits; each turns
 * on the limits it measures.
 */
export const NO_RATE_LIMITS = {
  RATE_LIMIT_USER: 'off',
  RATE_LIMIT_IP: 'off',
  RATE_LIMIT_POLL_IP: 'off',
} as const;

/** A limit's variable: `<n>/s` or `<n>/m`. */
export const rate = z
  .string()
  .regex(/^[1-9]\d{0,8}\/(s|m)$/, 'must be <n>/s or <n>/m, n >= 1, e.g. 5/s');
/** A limit that may be turned off: `off`, or a rate as {@link rate}. */
export const rateOrOff = z
  .string()
  .regex(/^(off|[1-9]\d{0,8}\/(s|m))$/, 'must be <n>/s or <n>/m, n >= 1, e.g. 5/s, or off');
