/**
 * The launcher's `try:` line (`seckill up`, after `ready:`): a purchase of the demo sale with curl,
 * the shopper named as the auth mode takes it: `X-User-Id` in dev, a bearer JWT otherwise, and
 * which JWT: HS256 with JWT_SECRET, or one the identity provider behind JWT_JWKS_URL issued (the
 * launcher cannot sign that one: it says where it comes from, and how to try without it).
 */
import type { Config } from '../config/index.js';

/** How a shopper's token is made in this auth mode, in words. */
function tokenHint(auth: Config['auth']): string {
  const hs256 = 'an HS256 JWT signed with JWT_SECRET';
  if (!auth.jwksUrl) return `${hs256}, sub = the shopper`;
  const provider =
    `a token your identity provider issued (iss ${auth.jwtIssuer ?? '?'}, aud ` +
    `${auth.jwtAudience ?? '?'}; RS256, ES256 or EdDSA with a key of ${auth.jwksUrl})`;
  return auth.jwtSecret
    ? `${hs256}, or ${provider}; sub = the shopper`
    : `${provider}, sub = the shopper; to try without one: AUTH_MODE=dev npm start`;
}

/** The `try:` line for the API at `base`, buying `productId`. */
export function tryLine(base: string, productId: string, auth: Config['auth']): string {
  const who =
    auth.mode === 'dev'
      ? `-H 'x-user-id: alice'`
      : `-H "authorization: Bearer $JWT" ($JWT: ${tokenHint(auth)})`;
  return (
    `try: curl -si -X POST ${base}/seckill -H 'content-type: application/json' ` +
    `${who} -d '{"productId":"${productId}"}'`
  );
}
