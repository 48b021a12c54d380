/**
 * Who is asking. Shoppers: a verified JWT (`sub` is the user id), HS256 with JWT_SECRET and/or
 * RS256, ES256 or EdDSA with the identity provider's published keys (JWT_JWKS_URL, jwks.ts), or
 * in dev mode the `X-User-Id` header (demos and load tests only). Admins: admin-session.ts (a session cookie, or
 * the bearer token, throttled per client address by AdminAccess).
 */
import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { isAdminToken, type AdminAccess } from '../services/index.js';
import { jwksOf, type JwksKeys } from './jwks.js';

const unauthorized = (detail: string) =>
  new ProblemError({
    status: 401,
    code: 'unauthorized',
    title: 'Authentication required',
    detail,
    headers: { 'WWW-Authenticate': 'Bearer' },
  });

/** What identity is read from: the request's headers (an Express request, or a bare one). */
type WithHeaders = Pick<IncomingMessage, 'headers'>;

export function bearer(req: WithHeaders): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer ([^\s]+)$/i.exec(h);
  return m?.[1];
}

/** Compact JWS: three base64url parts, no padding (jose tolerates a trailing "=", we do not). */
export const COMPACT_JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Clock skew tolerated on exp / nbf, in seconds. */
const LEEWAY_S = 30;

/** Signatures of the provider's published keys (JWT_JWKS_URL). */
const JWKS_ALGORITHMS = ['RS256', 'ES256', 'EdDSA', 'Ed25519'];

/** What jose reports, in words a client can act on (never which part of the signature). */
function whyRefused(err: unknown, algorithms: string[]): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    return `the token's claims are not valid: ${err.message}`;
  }
  if (err instanceof joseErrors.JOSEAlgNotAllowed) {
    return `the token must be signed with ${algorithms.join(', ')}`;
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey) {
    return "the token's key (kid) is not one of the identity provider's keys";
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) {
    return 'the token signature is not valid';
  }
  return 'the bearer token is not a valid JWT';
}

const keys = new Map<string, Uint8Array>();

/**
 * Verifies a JWT with jose and returns its claims: the signature (HS256 with `secret`, the
 * provider's algorithms with `jwks`; the header's `alg` picks which, each only with its own keys),
 * `exp` (required) and `nbf` as numbers with 30 s leeway, `sub` required, and `iss` / `aud` when
 * configured.
 * @throws ProblemError 401 naming what is wrong; 503 when the provider's keys cannot be fetched
 */
export async function verifyJwt(
  token: string,
  opts: {
    secret?: string | undefined;
    jwks?: JwksKeys | undefined;
    issuer?: string | undefined;
    audience?: string | undefined;
  },
): Promise<JWTPayload> {
  if (!COMPACT_JWT.test(token)) throw unauthorized('the bearer token is not a JWT');
  const { secret, jwks } = opts;
  let key: Uint8Array | undefined;
  if (secret !== undefined) {
    key = keys.get(secret);
    if (!key) keys.set(secret, (key = new TextEncoder().encode(secret)));
  }
  const algorithms = [...(key ? ['HS256'] : []), ...(jwks ? JWKS_ALGORITHMS : [])];
  const hs = key;
  try {
    const { payload } = await jwtVerify(
      token,
      async (header) => (header.alg === 'HS256' ? hs! : jwks!.keyFor(header)),
      {
        algorithms,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: LEEWAY_S,
        ...(opts.issuer && { issuer: opts.issuer }),
        ...(opts.audience && { audience: opts.audience }),
      },
    );
    return payload;
  } catch (err) {
    if (err instanceof ProblemError) throw err; // the provider's keys are away: 503
    throw unauthorized(
      whyRefused(
        err,
        algorithms.filter((a) => a !== 'Ed25519'),
      ),
    );
  }
}

/** Signs an HS256 JWT (tests, load tests and the docs' examples). */
export function signJwt(claims: Record<string, unknown>, secret: string): string {
  const h = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const p = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const s = createHmac('sha256', secret).update(`${h}.${p}`).digest('base64url');
  return `${h}.${p}.${s}`;
}

const badUserId = (where: string) =>
  new ProblemError({
    status: 400,
    code: 'invalid-user-id',
    title: 'Invalid user id',
    detail: `${where} must match ${ID_PATTERN}`,
  });

/**
 * The shopper's id for this request: at once in dev mode, after the token's check in jwt mode.
 * @throws ProblemError 401 / 400.
 */
export function shopperId(req: WithHeaders, auth: Config['auth']): string | Promise<string> {
  if (auth.mode === 'dev') {
    const id = req.headers['x-user-id'];
    if (typeof id !== 'string' || id === '') {
      throw unauthorized('AUTH_MODE=dev: send the shopper id in the X-User-Id header');
    }
    if (!ID_PATTERN.test(id)) throw badUserId('X-User-Id');
    return id;
  }
  const token = bearer(req);
  if (!token) throw unauthorized('send a bearer token (Authorization: Bearer <jwt>)');
  return jwtSubject(token, auth);
}

async function jwtSubject(token: string, auth: Config['auth']): Promise<string> {
  const claims = await verifyJwt(token, {
    secret: auth.jwtSecret,
    jwks: auth.jwksUrl === undefined ? undefined : jwksOf(auth.jwksUrl),
    issuer: auth.jwtIssuer,
    audience: auth.jwtAudience,
  });
  if (typeof claims.sub !== 'string' || !ID_PATTERN.test(claims.sub)) {
    throw unauthorized(`the token's sub must be a user id matching ${ID_PATTERN}`);
  }
  return claims.sub;
}

/**
 * When the shopper's account was made (ms), from the claim FAIRNESS_ACCOUNT_AGE_CLAIM names in
 * their token (a NumericDate in seconds, or an ISO 8601 date): a signal of the fairness rules,
 * read at a join, an entry or a sale token. Undefined when no claim is configured, in dev mode
 * (no token), or when the token carries none that reads as a time.
 */
export async function accountCreatedAt(
  req: WithHeaders,
  auth: Config['auth'],
): Promise<number | undefined> {
  const claim = auth.accountAgeClaim;
  if (!claim || auth.mode === 'dev') return undefined;
  const token = bearer(req);
  if (!token) return undefined;
  const claims = await verifyJwt(token, {
    secret: auth.jwtSecret,
    jwks: auth.jwksUrl === undefined ? undefined : jwksOf(auth.jwksUrl),
    issuer: auth.jwtIssuer,
    audience: auth.jwtAudience,
  });
  const value = claims[claim];
  if (typeof value === 'number' && Number.isFinite(value)) return value * 1_000;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/**
 * Whether the request is an admin's, for reads open to the owner or an admin (GET /orders/:id):
 * a bearer that is the admin token, checked and throttled like every admin token
 * (AdminAccess.check: a wrong one counts against the client address). A shopper's JWT (jwt mode)
 * is not an admin guess and is left to shopperId.
 * @throws ProblemError 429 while the address is past ADMIN_GUESS_LIMIT
 */
export async function isAdmin(
  req: Request,
  auth: Config['auth'],
  access: Pick<AdminAccess, 'check'>,
): Promise<boolean> {
  const token = bearer(req);
  if (token === undefined) return false;
  if (auth.mode === 'jwt' && COMPACT_JWT.test(token) && !isAdminToken(token, auth.adminToken)) {
    return false;
  }
  return access.check(token, req.ip ?? '');
}
