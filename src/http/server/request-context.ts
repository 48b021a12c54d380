/**
 * One middleware per request instead of a logging framework's: the correlation id (a sane
 * incoming `X-Request-Id`, else a UUID; echoed in the response), the HTTP metrics, and the request
 * log. No child logger is made per request: errors and 5xx are logged in full by the error
 * handler, 4xx are logged at debug, and the access log is a summary line per interval (requests by
 * route and status, latency percentiles), so a flash sale's thousands of 202s and 409s a second
 * cost counters, not log lines.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { IRouter, Request, RequestHandler } from 'express';
import type { Logger } from '../../log.js';
import type { HttpMetrics } from '../../metrics.js';

declare module 'http' {
  interface IncomingMessage {
    /** correlation id of this request */
    id: string;
  }
}

export const REQUEST_ID = /^[\w.:-]{1,128}$/;
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The app's routes by method, as patterns: a request that fails before reaching its route (a
 * malformed body, a 415) is still counted under its route, not as unmatched.
 */
export class RouteTable {
  private readonly routes: Array<{ method: string; pattern: string; re: RegExp }> = [];

  add(method: string, pattern: string): void {
    const re = new RegExp(
      `^${pattern
        .split('/')
        .map((part) =>
          part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('/')}/?$`,
    );
    this.routes.push({ method: method.toUpperCase(), pattern, re });
  }

  /**
   * `router` with its get/post/put/patch/delete recorded here as they are declared (what the
   * feature modules mount on is this view of the app).
   */
  recording(router: IRouter): IRouter {
    const table = this;
    return new Proxy(router, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof prop !== 'string' || !['get', 'post', 'put', 'patch', 'delete'].includes(prop)) {
          return typeof value === 'function' ? value.bind(target) : value;
        }
        return (path: unknown, ...handlers: unknown[]) => {
          // app.get(name) with no handler reads a setting: not a route
          if (typeof path === 'string' && handlers.length > 0) table.add(prop, path);
          return (value as (...a: unknown[]) => unknown).call(target, path, ...handlers);
        };
      },
    });
  }

  match(method: string, path: string): string | undefined {
    for (const r of this.routes) if (r.method === method && r.re.test(path)) return r.pattern;
    return undefined;
  }
}

/** The route a request matched (its pattern), or where it stopped before routing. */
export function routeOf(req: Request, table?: RouteTable): string {
  if (req.route) return `${req.baseUrl}${String(req.route.path)}`;
  return table?.match(req.method, req.path) ?? 'unmatched';
}

export interface AccessLog {
  record(route: string, status: number, ms: number): void;
  close(): void;
}

/**
 * Counts answers by route and status and logs them once per interval (nothing when idle).
 * @param intervalMs - 0 turns the summary off.
 */
export function accessLog(logger: Logger, intervalMs: number): AccessLog {
  // by route, then status: no key string is built per request
  let counts = new Map<string, Map<number, number>>();
  let latencies: number[] = [];
  const flush = () => {
    if (counts.size === 0) return;
    const byRouteAndStatus: Record<string, number> = {};
    for (const [route, byStatus] of counts) {
      for (const [status, n] of byStatus) byRouteAndStatus[`${route} ${status}`] = n;
    }
    latencies.sort((a, b) => a - b);
    const at = (fraction: number) =>
      Math.round(
        latencies[Math.min(latencies.length - 1, Math.floor(fraction * latencies.length))]! * 10,
      ) / 10;
    logger.info(
      {
        windowMs: intervalMs,
        requests: latencies.length,
        byRouteAndStatus,
        p50Ms: at(0.5),
        p99Ms: at(0.99),
      },
      'access summary',
    );
    counts = new Map();
    latencies = [];
  };
  const timer = intervalMs > 0 ? setInterval(flush, intervalMs) : undefined;
  timer?.unref();
  return {
    record(route, status, ms) {
      if (!timer) return;
      let byStatus = counts.get(route);
      if (!byStatus) counts.set(route, (byStatus = new Map()));
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      // bounded: a sample of one window is enough for its percentiles
      if (latencies.length < 100_000) latencies.push(ms);
    },
    close() {
      clearInterval(timer);
      flush();
    },
  };
}

export function requestContext(opts: {
  logger: Logger;
  metrics: HttpMetrics;
  access: AccessLog;
  routes: RouteTable;
}): RequestHandler {
  return (req, res, next) => {
    const start = performance.now();
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    (req as IncomingMessage).id = id;
    res.setHeader('x-request-id', id);
    res.once('finish', () => {
      const ms = performance.now() - start;
      const route = routeOf(req, opts.routes);
      const status = res.statusCode;
      opts.metrics.observe(req.method, route, status, ms / 1000, res.locals.problem as string);
      if (QUIET_PATHS.has(req.path)) return;
      opts.access.record(route, status, ms);
      if (status >= 400 && status < 500 && opts.logger.isLevelEnabled('debug')) {
        opts.logger.debug(
          { requestId: id, method: req.method, url: req.originalUrl, status, ms },
          'request refused',
        );
      }
    });
    next();
  };
}
