/**
 * The admin surface (everything under /admin: the admin API, the dashboard, Bull Board) is for
 * the admin's own browser tab and for scripts, never for another origin's page. CORS belongs to
 * the shop's routes (cors.ts leaves /admin out); here, as Express routes it (any case), an admin
 * answer loses whatever CORS header was set before it, and a browser request that another site
 * (or another origin of this site: a shop on shop.example beside the API on api.shop.example is
 * same-site, and carries a SameSite=Strict cookie) started is refused, reads included, by its
 * Fetch Metadata (`Sec-Fetch-Site`):
 *
 * - `same-origin`, `none` (typed, a bookmark) and no header (not a browser, or an old one): let in;
 * - `same-site`, `cross-site`: refused 403, unless it is a top-level GET navigation (the user
 *   follows a link to the dashboard: the page is shown to the user, never to the page that linked
 *   it; a frame or a form post is no navigation of that kind).
 */
import type { RequestHandler } from 'express';
import { ProblemError } from '../../errors.js';

const ALLOWED_SITES = new Set(['same-origin', 'none']);

/** Headers cors.ts may have set: an admin answer carries none of them. */
const CORS_HEADERS = [
  'Access-Control-Allow-Origin',
  'Access-Control-Allow-Credentials',
  'Access-Control-Expose-Headers',
  'Access-Control-Allow-Methods',
  'Access-Control-Allow-Headers',
  'Access-Control-Max-Age',
];

/** Whether a request with these Fetch Metadata headers may reach the admin surface. */
export function sameOriginOrNavigation(
  headers: Record<string, string | string[] | undefined>,
  method: string,
): boolean {
  const site = headers['sec-fetch-site'];
  if (site === undefined || ALLOWED_SITES.has(String(site))) return true;
  return (
    method === 'GET' &&
    headers['sec-fetch-mode'] === 'navigate' &&
    headers['sec-fetch-dest'] === 'document'
  );
}

/** Mounted on /admin before every admin route (the dashboard's login included). */
export function adminIsolation(): RequestHandler {
  return (req, res, next) => {
    for (const name of CORS_HEADERS) res.removeHeader(name);
    if (!sameOriginOrNavigation(req.headers, req.method)) {
      throw new ProblemError({
        status: 403,
        code: 'cross-site-request',
        title: 'Cross-site request refused',
        detail: `a ${String(req.headers['sec-fetch-site'])} ${req.method} to the admin API is refused: open the dashboard on its own origin, or call from a script`,
      });
    }
    next();
  };
}
