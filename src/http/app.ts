/**
 * Builds the Express app from its services; never listens (the composition root does).
 * Middleware, cheapest first: request context (id, metrics, log), the probes, JSON bodies, the
 * shop's hot route, the other routes, 404, one problem+json error handler.
 */
import { Gauge } from 'prom-client';
import type { RequestListener } from 'node:http';
import express, { type Express, type IRouter } from 'express';
import proxyaddr from 'proxy-addr';
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { httpMetrics, type Registry } from '../metrics.js';
import { jsonBody } from './server/body.js';
import { adminIsolation } from './server/admin-isolation.js';
import { corsMiddleware, corsPolicy } from './server/cors.js';
import { fastPath } from './fast-path.js';
import { Inflight, inflightCap } from './server/inflight.js';
import { mountHealth, Readiness, type ReadinessCheck } from './routes/health.js';
import { errorHandler, notFound } from './problem.js';
import type { PlacePoll } from './routes/room.js';
import type { Seckill } from './handlers/seckill.js';
import { accessLog, requestContext, RouteTable } from './server/request-context.js';

export interface AppParts {
  http: Pick<Config['http'], 'bodyLimitBytes'> & {
    accessLogIntervalMs?: number;
    /** which browser origins may call (absent or no origins: no CORS answers) */
    cors?: Config['http']['cors'];
  };
  /** the cap on requests in flight, and whose X-Forwarded-For names the client */
  admission?: Pick<Config['admission'], 'maxInflight' | 'trustProxy'>;
  logger: Logger;
  registry: Registry;
  /** what `/metrics` serves (default: `registry`; several API processes merge theirs) */
  metricsText?: () => Promise<string>;
  readiness: ReadinessCheck[];
  /** Feature routes (shop, orders, admin), mounted on the app in this order after the probes. */
  routes?: Array<(app: IRouter) => void>;
  /**
   * Answer the probes and `POST /seckill` ahead of Express (fast-path.ts), with the same function
   * the shop's Express route calls. Absent: every request goes through Express.
   */
  fastPath?: { seckill: Seckill; placePoll?: PlacePoll | undefined };
}

export interface App {
  express: Express;
  /** what the HTTP server calls: the fast path in front of Express, or Express alone */
  handler: RequestListener;
  /** shutdown begins: /readyz answers 503, requests are still served */
  drain(): void;
  /** flushes the access summary (shutdown) */
  close(): void;
}

export function buildApp(parts: AppParts): App {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', parts.admission?.trustProxy ?? false);

  const access = accessLog(parts.logger, parts.http.accessLogIntervalMs ?? 10_000);
  const routes = new RouteTable();
  const metrics = httpMetrics(parts.registry);
  app.use(requestContext({ logger: parts.logger, metrics, access, routes }));
  const cors = parts.http.cors && corsPolicy(parts.http.cors);
  if (cors) app.use(corsMiddleware(cors));
  // the admin surface answers no other origin, whatever the CORS settings (admin-isolation.ts)
  app.use('/admin', adminIsolation());
  const readiness = new Readiness(parts.readiness).start();
  mountHealth(app, readiness);
  // readiness as a series, for an alert (a probe's 503 is seen by the orchestrator only)
  if (!parts.registry.getSingleMetric('seckill_ready')) {
    new Gauge({
      name: 'seckill_ready',
      help: '1 while /readyz answers ready (Redis and PostgreSQL answered, not draining), else 0',
      registers: [parts.registry],
      aggregator: 'min', // several API processes merged: one not ready shows
      collect() {
        this.set(readiness.ready ? 1 : 0);
      },
    });
  }
  const metricsText = parts.metricsText ?? (() => parts.registry.metrics());
  app.get('/metrics', async (_req, res) => {
    res.type(parts.registry.contentType).send(await metricsText());
  });
  const inflight = new Inflight(parts.admission?.maxInflight ?? 0);
  // the cap counts a request once its body is read: a slow body holds no slot it has not earned
  app.use(jsonBody(parts.http.bodyLimitBytes));
  if (inflight.cap > 0) app.use(inflightCap(inflight));
  const recorded = routes.recording(app);
  for (const mount of parts.routes ?? []) mount(recorded);
  app.use(notFound);
  app.use(errorHandler(parts.logger));
  const trust = app.get('trust proxy fn') as (addr: string, i: number) => boolean;
  const handler: RequestListener = parts.fastPath
    ? fastPath(
        {
          seckill: parts.fastPath.seckill,
          placePoll: parts.fastPath.placePoll,
          cors,
          // what Express's req.ip reads: the socket's address, or X-Forwarded-For under TRUST_PROXY
          clientIp: (req) => proxyaddr(req, trust),
          logger: parts.logger,
          readiness,
          inflight,
          metrics,
          access,
        },
        app as unknown as RequestListener,
      )
    : (app as unknown as RequestListener);
  return {
    express: app,
    handler,
    drain: () => {
      readiness.draining = true;
    },
    close: () => {
      readiness.stop();
      access.close();
    },
  };
}
