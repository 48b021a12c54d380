/**
 * Admin access over HTTP: the session cookie (dashboard and Bull Board in a browser) or the
 * bearer token (scripts). The cookie is HttpOnly, SameSite=Strict, path /admin (every admin
 * page: the dashboard, Bull Board at /admin/queues, the admin API), and Secure when the request
 * came over TLS (req.secure: X-Forwarded-Proto behind a trusted proxy, TRUST_PROXY).
 */
import type { Request, RequestHandler, Response } from 'express';
import { ProblemError } from '../errors.js';
import type { AdminAccess, AdminSession } from '../services/index.js';
import { bearer } from './auth.js';

export const SESSION_COOKIE = 'seckill_admin';
const COOKIE_PATH = '/admin';
/** the dashboard-only cookie of earlier versions: sent first on /admin/dashboard, so cleared */
const LEGACY_COOKIE = { name: 'seckill_dashboard', path: '/admin/dashboard' };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session cookie's value, if the request carries one. */
export function sessionCookie(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const c = part.trim();
    if (c.startsWith(`${SESSION_COOKIE}=`)) return c.slice(SESSION_COOKIE.length + 1);
  }
  return undefined;
}

export function setSessionCookie(req: Request, res: Response, session: AdminSession): void {
  res.clearCookie(LEGACY_COOKIE.name, { path: LEGACY_COOKIE.path });
  res.cookie(SESSION_COOKIE, session.value, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.secure,
    path: COOKIE_PATH,
    expires: session.expires,
  });
}

export function clearSessionCookie(req: Request, res: Response): void {
  res.clearCookie(SESSION_COOKIE, {
    httpOnly: true,
    sameSite: 'strict',
    secure: req.secure,
    path: COOKIE_PATH,
  });
}

const unauthorized = () =>
  new ProblemError({
    status: 401,
    code: 'unauthorized',
    title: 'Authentication required',
    detail: 'log in at /admin/dashboard (a browser), or send Authorization: Bearer <ADMIN_TOKEN>',
    headers: { 'WWW-Authenticate': 'Bearer' },
  });

/**
 * Lets an admin through: an open session, or the right bearer token.
 * @throws ProblemError 401 neither, 403 a wrong token (or a session cookie sent cross-site on a
 *   request that changes something), 429 too many wrong tokens from this address
 */
export async function authorizeAdmin(req: Request, access: AdminAccess): Promise<void> {
  const token = bearer(req);
  if (token === undefined) {
    const session = sessionCookie(req);
    if (session === undefined || !(await access.valid(session))) throw unauthorized();
    // SameSite=Strict keeps other sites' requests from carrying it; a browser that says where a
    // request comes from is held to it too
    const site = req.headers['sec-fetch-site'];
    if (!SAFE_METHODS.has(req.method) && site !== undefined && site !== 'same-origin') {
      throw new ProblemError({
        status: 403,
        code: 'forbidden',
        title: 'Forbidden',
        detail: `a session cookie does not authorize a ${site} ${req.method}`,
      });
    }
    return;
  }
  if (!(await access.check(token, req.ip ?? ''))) {
    throw new ProblemError({
      status: 403,
      code: 'forbidden',
      title: 'Forbidden',
      detail: 'wrong admin token',
    });
  }
}

export function adminGuard(access: AdminAccess): RequestHandler {
  return async (req, _res, next) => {
    await authorizeAdmin(req, access);
    next();
  };
}
