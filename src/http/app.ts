/**
 * Builds the Express app from its services; never listens (the composition root does).
 * Middleware, cheapest first: request context (id, metrics, log), the probes, JSON bodies, the
 * shop's hot route, the other routes, 404, one problem+json error handler.
 */
import { Gauge } from 'prom-client';
import type { RequestListener } from 'node:http';
import express, { type Express, type IRouter } from 'express';
import type { SaleError } from '../inventory/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { httpMetrics, type Registry } from '../metrics.js';
import { jsonBody } from './body.js';
import { fastPath } from './fast-path.js';
import { Inflight, inflightCap } from './inflight.js';
import { mountHealth, Readiness, type ReadinessCheck } from './health.js';
import { errorHandler, notFound } from './problem.js';
import { accessLog, requestContext, RouteTable } from './request-context.js';

export interface AppParts {
  http: Pick<Config['http'], 'bodyLimitBytes'> & { accessLogIntervalMs?: number };
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
   * Answer the probes and known sold-out refusals ahead of Express (fast-path.ts); `refusal` is
   * checkout's answer from memory. Absent: every request goes through Express.
   */
  fastPath?: { refusal(productId: string): SaleError | undefined };
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
  if (inflight.cap > 0) app.use(inflightCap(inflight));
  app.use(jsonBody(parts.http.bodyLimitBytes));
  const recorded = routes.recording(app);
  for (const mount of parts.routes ?? []) mount(recorded);
  app.use(notFound);
  app.use(errorHandler(parts.logger));
  const handler: RequestListener = parts.fastPath
    ? fastPath(
        { refusal: parts.fastPath.refusal, readiness, inflight, metrics, access },
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
