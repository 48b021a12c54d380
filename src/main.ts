/**
 * Serves the API: builds the app from the runtime, listens, and registers the HTTP server's close
 * (stop accepting, finish in-flight requests) so it runs first at shutdown.
 */
import type { Server } from 'node:http';
import { adminRouter } from './http/admin.js';
import { buildApp } from './http/app.js';
import { ordersRouter } from './http/orders.js';
import { shopRouter } from './http/shop.js';
import type { Purchase } from './inventory/index.js';
import type { Queue } from 'bullmq';
import type { Runtime } from './runtime.js';

export interface ServeOptions {
  /** hands each sale to the order queue */
  onPurchase?: (p: Purchase) => void;
  /** queues shown on the admin dashboard */
  queues?: Queue[];
}

export async function serveApi(rt: Runtime, o: ServeOptions = {}): Promise<Server> {
  const app = buildApp({
    config: rt.config,
    logger: rt.logger,
    registry: rt.registry,
    readiness: rt.readiness,
    routers: [
      shopRouter({
        config: rt.config,
        sale: rt.inventory.sale,
        redis: rt.redis,
        keys: rt.inventory.keys,
        ...(o.onPurchase && { onPurchase: o.onPurchase }),
      }),
      ordersRouter({ config: rt.config, redis: rt.redis, keys: rt.inventory.keys, db: rt.db }),
      adminRouter({
        config: rt.config,
        redis: rt.redis,
        keys: rt.inventory.keys,
        db: rt.db,
        catalog: rt.inventory.catalog,
        queues: o.queues ?? [],
      }),
    ],
  });
  const server = app.listen(rt.config.http.port, rt.config.http.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // Keep-alive must outlive the load balancer's idle timeout; headers timeout above it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  rt.lifecycle.add('http server', async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
  });
  const addr = server.address();
  rt.logger.info(
    { url: typeof addr === 'object' && addr ? `http://${addr.address}:${addr.port}` : addr },
    'API listening',
  );
  return server;
}
