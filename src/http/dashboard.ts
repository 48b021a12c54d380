/**
 * The live sale dashboard: `GET /admin/dashboard` (the page, or its login form), `POST
 * /admin/dashboard/login` and `/logout`, and `GET /admin/dashboard/stream` (Server-Sent Events,
 * a snapshot about twice a second). The admin token never goes in a URL: the login form posts it
 * once, and gets a signed session cookie (HttpOnly, SameSite=Strict, path /admin/dashboard) that
 * every API process can check (it is keyed with ADMIN_TOKEN). The stream also takes the bearer
 * token, for scripts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import type { DashboardFeed } from '../services/index.js';
import { isAdmin, isAdminToken } from './auth.js';
import { dashboardPage, loginPage } from './dashboard-page.js';
import { parseOr400 } from './validation.js';

const COOKIE = 'seckill_dashboard';
const SESSION_MS = 12 * 3_600_000;

const sign = (secret: string, expires: number) =>
  createHmac('sha256', secret).update(`dashboard.${expires}`).digest('base64url');

/** A session cookie value for `secret`, valid until `expires`. */
function sessionValue(secret: string, expires: number): string {
  return `v1.${expires}.${sign(secret, expires)}`;
}

function validSession(req: Request, secret: string | undefined): boolean {
  if (!secret) return false;
  const raw = (req.headers.cookie ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${COOKIE}=`))
    ?.slice(COOKIE.length + 1);
  const [version, expiresText, signature] = (raw ?? '').split('.');
  const expires = Number(expiresText);
  if (version !== 'v1' || !Number.isInteger(expires) || expires < Date.now() || !signature) {
    return false;
  }
  const given = Buffer.from(signature, 'base64url');
  const expected = Buffer.from(sign(secret, expires), 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const loginBody = z.strictObject({ token: z.string().min(1).max(512) });

const page = (res: Response, status: number, html: string) => {
  res.status(status).set({
    'Content-Type': 'text/html; charset=utf-8',
    // the page's own script and styles only; no framing (clickjacking)
    'Content-Security-Policy':
      "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'",
    'Cache-Control': 'no-store',
  });
  res.send(html);
};

export interface DashboardRoutes {
  auth: Config['auth'];
  feed: DashboardFeed;
}

export function mountDashboard(router: IRouter, deps: DashboardRoutes): void {
  const secret = deps.auth.adminToken;
  const allowed = (req: Request) => validSession(req, secret) || isAdmin(req, secret);

  router.get('/admin/dashboard', (req, res) => {
    page(res, 200, validSession(req, secret) ? dashboardPage() : loginPage());
  });

  router.post('/admin/dashboard/login', (req, res) => {
    const { token } = parseOr400(loginBody, req.body ?? {}, 'login');
    if (secret === undefined || !isAdminToken(token, secret)) {
      throw new ProblemError({
        status: 401,
        code: 'unauthorized',
        title: 'Wrong admin token',
        detail: 'the token does not match ADMIN_TOKEN',
      });
    }
    const expires = Date.now() + SESSION_MS;
    res.cookie(COOKIE, sessionValue(secret, expires), {
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
      path: '/admin/dashboard',
      expires: new Date(expires),
    });
    res.status(204).end();
  });

  router.post('/admin/dashboard/logout', (_req, res) => {
    res.clearCookie(COOKIE, { path: '/admin/dashboard' });
    res.status(204).end();
  });

  router.get('/admin/dashboard/stream', (req, res) => {
    if (!allowed(req)) {
      throw new ProblemError({
        status: 401,
        code: 'unauthorized',
        title: 'Authentication required',
        detail: 'log in at /admin/dashboard, or send Authorization: Bearer <ADMIN_TOKEN>',
      });
    }
    res.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    res.write('retry: 2000\n\n');
    const unsubscribe = deps.feed.subscribe(
      (s) => res.write(`data: ${JSON.stringify(s)}\n\n`),
      () => res.end(),
    );
    // the viewer went away (tab closed, network gone): stop, and the feed stops with the last one
    res.on('close', unsubscribe);
  });
}
