/**
 * Who is asking. Shoppers: a verified HS256 JWT (`sub` is the user id), or in dev mode the
 * `X-User-Id` header (demos and load tests only). Admins: a bearer token compared in constant time.
 */
import { createHmac, timingSafeEqual, createHash } from 'node:crypto';
import type { Request } from 'express';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';

const unauthorized = (detail: string) =>
  new ProblemError({
    status: 401,
    code: 'unauthorized',
    title: 'Authentication required',
    detail,
    headers: { 'WWW-Authenticate': 'Bearer' },
  });

function bearer(req: Request): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer ([^\s]+)$/i.exec(h);
  return m?.[1];
}

function b64urlJson(part: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Clock skew tolerated on exp / nbf, in seconds. */
const LEEWAY_S = 30;

/**
 * Verifies an HS256 JWT and returns its claims.
 * @throws ProblemError 401 naming what is wrong (never which part of the signature).
 */
export function verifyJwt(
  token: string,
  o: { secret: string; issuer?: string | undefined; audience?: string | undefined; nowS?: number },
): Record<string, unknown> {
  const parts = token.split('.');
  if (parts.length !== 3) throw unauthorized('the bearer token is not a JWT');
  const [h, p, sig] = parts as [string, string, string];
  const header = b64urlJson(h);
  if (header?.alg !== 'HS256') throw unauthorized('the token must be signed with HS256');
  const expected = createHmac('sha256', o.secret).update(`${h}.${p}`).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw unauthorized('the token signature is not valid');
  }
  const claims = b64urlJson(p);
  if (!claims) throw unauthorized('the token payload is not a JSON object');
  const now = o.nowS ?? Math.floor(Date.now() / 1000);
  if (typeof claims.exp === 'number' && now > claims.exp + LEEWAY_S) {
    throw unauthorized('the token has expired');
  }
  if (typeof claims.nbf === 'number' && now + LEEWAY_S < claims.nbf) {
    throw unauthorized('the token is not valid yet');
  }
  if (o.issuer && claims.iss !== o.issuer) throw unauthorized('the token has the wrong issuer');
  if (o.audience) {
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(o.audience)) throw unauthorized('the token has the wrong audience');
  }
  return claims;
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

/** The shopper's id for this request. @throws ProblemError 401 / 400. */
export function shopperId(req: Request, auth: Config['auth']): string {
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
  const claims = verifyJwt(token, {
    secret: auth.jwtSecret!,
    issuer: auth.jwtIssuer,
    audience: auth.jwtAudience,
  });
  if (typeof claims.sub !== 'string' || !ID_PATTERN.test(claims.sub)) {
    throw unauthorized(`the token's sub must be a user id matching ${ID_PATTERN}`);
  }
  return claims.sub;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Checks the admin bearer token in constant time (both sides hashed to equal length first).
 * @throws ProblemError 401 without a token, 403 with a wrong one (or none configured).
 */
export function requireAdmin(req: Request, adminToken: string | undefined): void {
  const token = bearer(req);
  if (!token) throw unauthorized('admin routes need Authorization: Bearer <ADMIN_TOKEN>');
  const ok = adminToken !== undefined && timingSafeEqual(digest(token), digest(adminToken));
  if (!ok) {
    throw new ProblemError({
      status: 403,
      code: 'forbidden',
      title: 'Forbidden',
      detail: adminToken === undefined ? 'no ADMIN_TOKEN is configured' : 'wrong admin token',
    });
  }
}

/** Whether the request carries the admin token (for reads open to the owner or an admin). */
export function isAdmin(req: Request, adminToken: string | undefined): boolean {
  const token = bearer(req);
  return (
    token !== undefined &&
    adminToken !== undefined &&
    timingSafeEqual(digest(token), digest(adminToken))
  );
}
