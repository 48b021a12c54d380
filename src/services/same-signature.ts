/**
 * Whether `given` is exactly `expected` (constant time): the one comparison of every HMAC this
 * service checks (sale tokens, admin sessions). Compared as text, not as decoded bytes: base64url
 * decoding forgives padding ("=") and unused low bits, so several strings decode to one
 * signature; only the one the signer writes is accepted.
 */
import { timingSafeEqual } from 'node:crypto';

export function sameSignature(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
