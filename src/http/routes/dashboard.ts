/**
 * The live sale dashboard: `GET /admin/dashboard` (the page, or its login form), `POST
 * /admin/dashboard/login` and `/logout`, and `GET /admin/dashboard/stream` (Server-Sent Events,
 * a snapshot about twice a second). The admin token never goes in a URL: the login form posts it
 * once (throttled per address like every admin token), and gets the admin session cookie
 * (admin-session.ts: path /admin, so it opens Bull Board too). A logout ends the session for
 * every API process, and the streams it opened there. The stream also takes the bearer token,
 * for scripts.
 */
import type { IRouter, Response } from 'express';
import { z } from 'zod';
import { ProblemError } from '../../errors.js';
import type { AdminAccess, DashboardFeed, DashboardSnapshot } from '../../services/index.js';
import {
  authorizeAdmin,
  clearSessionCookie,
  sessionCookie,
  setSessionCookie,
} from '../admin-session.js';
import { bearer } from '../auth.js';
import { dashboardPage, loginPage, type DashboardLinks } from './dashboard-page.js';
import { releaseInflight } from '../server/inflight.js';
import { parseOr400 } from '../validation.js';

export const loginBody = z.strictObject({ token: z.string().min(1).max(512) });

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
  access: AdminAccess;
  feed: DashboardFeed;
  /** pages the dashboard links to (Bull Board when mounted; /metrics always) */
  links?: DashboardLinks;
}

export function mountDashboard(router: IRouter, deps: DashboardRoutes): void {
  const { access } = deps;

  router.get('/admin/dashboard', async (req, res) => {
    page(
      res,
      200,
      (await access.valid(sessionCookie(req))) ? dashboardPage(deps.links) : loginPage(),
    );
  });

  router.post('/admin/dashboard/login', async (req, res) => {
    const { token } = parseOr400(loginBody, req.body ?? {}, 'login');
    if (!(await access.check(token, req.ip ?? ''))) {
      throw new ProblemError({
        status: 401,
        code: 'unauthorized',
        title: 'Wrong admin token',
        detail: 'the token does not match ADMIN_TOKEN',
      });
    }
    setSessionCookie(req, res, await access.open());
    res.status(204).end();
  });

  router.post('/admin/dashboard/logout', async (req, res) => {
    await access.close(sessionCookie(req));
    clearSessionCookie(req, res);
    res.status(204).end();
  });

  router.get('/admin/dashboard/stream', async (req, res) => {
    await authorizeAdmin(req, access);
    res.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    releaseInflight(res);
    res.write('retry: 2000\n\n');
    // the charts' last minutes first: a page opened mid-sale does not start empty
    res.write(`event: history\ndata: ${JSON.stringify(deps.feed.history())}\n\n`);
    // A stream opened by a session lives only as long as the session: a logout (on any process;
    // sessions live in Redis) ends it at the next snapshot. One EXISTS per snapshot and viewer.
    const session = bearer(req) === undefined ? sessionCookie(req) : undefined;
    let checking = false;
    const send = (snapshot: DashboardSnapshot) => {
      if (session === undefined) return void res.write(`data: ${JSON.stringify(snapshot)}\n\n`);
      if (checking) return; // the last check has not answered: skip this snapshot
      checking = true;
      access.valid(session).then(
        (valid) => {
          checking = false;
          if (!valid) res.end();
          else if (!res.writableEnded) res.write(`data: ${JSON.stringify(snapshot)}\n\n`);
        },
        () => {
          checking = false; // Redis away: the next snapshot asks again
        },
      );
    };
    const unsubscribe = deps.feed.subscribe(send, () => res.end());
    // the viewer went away (tab closed, network gone): stop, and the feed stops with the last one
    res.on('close', unsubscribe);
  });
}
