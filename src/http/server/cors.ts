/**
 * Cross-origin calls from a shop's own pages (CORS_ORIGINS). Every answer's CORS headers are made
 * once per allowed origin and kept as a flat list, so annotating an answer costs a map lookup: the
 * fast path writes the list with its own headers, Express's middleware sets it at the start of
 * the answer, in the same place, so both paths send the same headers in the same order. A
 * preflight is answered wherever it arrives first (the fast path, or this middleware when the fast
 * path is off), never by a route: no Redis command, no identity, nothing but this table.
 *
 * An allowed origin is echoed, never `*`; another origin's answer carries no CORS header but
 * `Vary: Origin` (so a cache keeps the two apart), and its preflight is refused with a 403.
 *
 * CORS is for the shop's routes only: under /admin (the admin API, the dashboard, Bull Board) no
 * origin is allowed, whatever CORS_ORIGINS and CORS_CREDENTIALS say, and a preflight is refused:
 * with credentials allowed, a script of the shop's page would read the admin API with the
 * session cookie of an admin logged in beside it (admin-isolation.ts refuses such requests too).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Config } from '../../config/index.js';
import { problemType } from '../../errors.js';
import { PROBLEM_JSON } from '../problem.js';

/**
 * Request headers a shop's page may send: identity, the purchase's keys, the sale token, the
 * door's answer and the fingerprint the shop passes (docs/fairness.md).
 */
export const CORS_REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'Sale-Token',
  'X-User-Id',
  'X-Request-Id',
  'Challenge',
  'Shopper-Fingerprint',
];
/** Answer headers a page may read: when to retry, its rate limit, a replay, where the order is. */
export const CORS_EXPOSED_HEADERS = [
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'Idempotent-Replayed',
  'Location',
  'X-Request-Id',
];
const METHODS = 'GET, POST, PUT, PATCH, DELETE';

const VARY = ['Vary', 'Origin'] as const;

/** The admin surface, in any case (Express routes /ADMIN/... there too). */
const ADMIN_PATH = /^\/admin(?:[/?#]|$)/i;
export const isAdminPath = (url: string | undefined) => ADMIN_PATH.test(url ?? '');

export interface Cors {
  /** the CORS headers of an answer to `req`, as flat name/value pairs (never empty: Vary) */
  headersOf(req: IncomingMessage): readonly string[];
  /** whether `req` is a preflight (OPTIONS with Origin and Access-Control-Request-Method) */
  isPreflight(req: IncomingMessage): boolean;
  /** writes the preflight's answer (204, or 403 for an origin not allowed); returns its status */
  answerPreflight(req: IncomingMessage, res: ServerResponse, requestId: string): number;
}

/** The policy of `config`, or undefined when no origin is allowed (nothing is added anywhere). */
export function corsPolicy(config: Config['http']['cors']): Cors | undefined {
  if (config.origins.length === 0) return undefined;
  const credentials = config.credentials ? ['Access-Control-Allow-Credentials', 'true'] : [];
  const answers = new Map<string, readonly string[]>();
  const preflights = new Map<string, readonly string[]>();
  for (const origin of config.origins) {
    const common = [...VARY, 'Access-Control-Allow-Origin', origin, ...credentials];
    answers.set(origin, [
      ...common,
      'Access-Control-Expose-Headers',
      CORS_EXPOSED_HEADERS.join(', '),
    ]);
    preflights.set(origin, [
      ...common,
      'Access-Control-Allow-Methods',
      METHODS,
      'Access-Control-Allow-Headers',
      CORS_REQUEST_HEADERS.join(', '),
      'Access-Control-Max-Age',
      String(config.maxAgeSeconds),
    ]);
  }
  const refusal = (origin: string, admin: boolean) =>
    JSON.stringify({
      type: problemType('cors-origin-not-allowed'),
      title: 'Origin not allowed',
      status: 403,
      detail: admin
        ? `pages of ${origin} may not call the admin API from a browser (CORS is for the shop's routes)`
        : `pages of ${origin} may not call this API from a browser (CORS_ORIGINS lists who may)`,
    });
  return {
    headersOf(req) {
      const origin = req.headers.origin;
      if (origin === undefined || isAdminPath(req.url)) return VARY;
      return answers.get(origin) ?? VARY;
    },
    isPreflight(req) {
      return (
        req.method === 'OPTIONS' &&
        req.headers.origin !== undefined &&
        req.headers['access-control-request-method'] !== undefined
      );
    },
    answerPreflight(req, res, requestId) {
      const origin = req.headers.origin!;
      const admin = isAdminPath(req.url);
      const allowed = admin ? undefined : preflights.get(origin);
      if (allowed) {
        res.writeHead(204, ['x-request-id', requestId, ...allowed]);
        res.end();
        return 204;
      }
      const body = refusal(origin, admin);
      res.writeHead(403, [
        'x-request-id',
        requestId,
        ...VARY,
        'Content-Type',
        `${PROBLEM_JSON}; charset=utf-8`,
        'Content-Length',
        String(Buffer.byteLength(body)),
      ]);
      res.end(body);
      return 403;
    },
  };
}

/**
 * Express's half: the CORS headers set on every answer (right after X-Request-Id, where the fast
 * path writes them), and the preflights answered when the fast path is off.
 */
export function corsMiddleware(cors: Cors): RequestHandler {
  return (req, res, next) => {
    if (cors.isPreflight(req)) return void cors.answerPreflight(req, res, req.id);
    const h = cors.headersOf(req);
    for (let i = 0; i < h.length; i += 2) res.setHeader(h[i]!, h[i + 1]!);
    next();
  };
}
