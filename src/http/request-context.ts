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
import type { Request, RequestHandler } from 'express';
import type { Logger } from '../log.js';
import type { HttpMetrics } from '../metrics.js';

declare module 'http' {
  interface IncomingMessage {
    /** correlation id of this request */
    id: string;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The route a request matched (its pattern), or where it stopped before routing. */
export function routeOf(req: Request): string {
  return req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
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
  let counts = new Map<string, number>();
  let latencies: number[] = [];
  const flush = () => {
    if (counts.size === 0) return;
    latencies.sort((a, b) => a - b);
    const at = (p: number) =>
      Math.round(
        latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]! * 10,
      ) / 10;
    logger.info(
      {
        windowMs: intervalMs,
        requests: latencies.length,
        byRouteAndStatus: Object.fromEntries(counts),
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
      const key = `${route} ${status}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
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
}): RequestHandler {
  return (req, res, next) => {
    const start = performance.now();
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    (req as IncomingMessage).id = id;
    res.setHeader('x-request-id', id);
    res.once('finish', () => {
      const ms = performance.now() - start;
      const route = routeOf(req);
      const status = res.statusCode;
      opts.metrics.observe(req.method, route, status, ms / 1000);
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
