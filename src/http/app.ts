/**
 * Builds the Express app from its services; never listens (main.ts does). Middleware order:
 * request id + log, metrics, JSON-only bodies, routes, 404, one problem+json error handler.
 */
import { randomUUID } from 'node:crypto';
import express, { type Express, type Router } from 'express';
import { pinoHttp } from 'pino-http';
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { httpMetrics, type Registry } from '../metrics.js';
import { healthRouter, type ReadinessCheck } from './health.js';
import { errorHandler, notFound, requireJsonBody } from './problem.js';

export interface AppServices {
  config: Config;
  logger: Logger;
  registry: Registry;
  readiness: ReadinessCheck[];
  /** Feature routers (shop, admin, orders), mounted in order after health and metrics. */
  routers?: Router[];
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export function buildApp(s: AppServices): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');

  app.use(
    pinoHttp({
      logger: s.logger,
      genReqId(req, res) {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        res.setHeader('x-request-id', id);
        return id;
      },
      autoLogging: { ignore: (req) => QUIET_PATHS.has(req.url?.split('?')[0] ?? '') },
      customLogLevel: (_req, res, err) =>
        err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug',
      quietReqLogger: true,
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url,
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    }),
  );

  const metrics = httpMetrics(s.registry);
  app.use((req, res, next) => {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      metrics.observe(
        req.method,
        route,
        res.statusCode,
        Number(process.hrtime.bigint() - start) / 1e9,
      );
    });
    next();
  });

  app.use(healthRouter(s.readiness));
  app.get('/metrics', async (_req, res) => {
    res.type(s.registry.contentType).send(await s.registry.metrics());
  });

  app.use(requireJsonBody);
  app.use(
    express.json({
      limit: s.config.http.bodyLimitBytes,
      strict: true,
      type: ['application/json', 'application/*+json'],
    }),
  );
  for (const r of s.routers ?? []) app.use(r);

  app.use(notFound);
  app.use(errorHandler(s.logger));
  return app;
}
