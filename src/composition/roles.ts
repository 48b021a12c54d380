/**
 * The composition root's second half: what each process role adds to the core. The API process
 * gets the order queue, the batching submitter, checkout and idempotency, and the HTTP app; the
 * worker process gets the order worker and the sweeper schedule. `seckill up` runs both roles in
 * one process.
 */
import type { Server } from 'node:http';
import type { Queue, Worker } from 'bullmq';
import { Counter } from 'prom-client';
import { BULL_BOARD_PATH, mountAdmin } from '../http/routes/admin.js';
import { buildApp } from '../http/app.js';
import { mountDashboard } from '../http/routes/dashboard.js';
import { mountOpenApi } from '../http/openapi/document.js';
import { mountOrders } from '../http/routes/orders.js';
import { createApiServer } from '../http/server/server.js';
import { mountPaymentNotices } from '../http/routes/payment-notices.js';
import { mountStripeNotices } from '../http/routes/stripe-notices.js';
import { seckill } from '../http/handlers/seckill.js';
import { mountRoom, placePoll } from '../http/routes/room.js';
import { mountQueuePage } from '../http/routes/queue-page.js';
import { loadQueuePageAssets } from '../http/routes/queue-page-assets.js';
import { mountDraw } from '../http/routes/draw.js';
import { mountShop } from '../http/routes/shop.js';
import {
  expireOrder,
  createOrderQueue,
  createOrderWorker,
  OrderSubmitter,
  PaymentRepository,
  registerOrderGauges,
  type PaymentWindowDeps,
} from '../orders/index.js';
import { configuredKinds } from '../config/door.js';
import { decoyFollowed, plainSaleTried } from './fairness-hooks.js';
import { AdminSessionStore } from '../access/index.js';
import { IdempotencyStore } from '../inventory/index.js';
import {
  AdminAccess,
  Checkout,
  NOTICE_SOURCES,
  Payments,
  PaymentNotices,
  REFUSAL_REASONS,
  StripeNotices,
  PurchaseService,
  type Services,
} from '../services/index.js';
import type { Core } from './core.js';
import { exitWhenBullInitFails, pauseWhileStoreFull } from './bull-init.js';
import { dashboardFeed } from './dashboard.js';
import { dropParts } from './drop.js';
import { apiIdentityKeys } from './identity-keys.js';
import { admissionAndRooms, type ApiServices } from './rooms.js';
import { startEventDelivery } from './events.js';
import { startUpkeep } from './upkeep.js';
import { inBackground } from '../redis/background.js';

/** The order queue on its own BullMQ connection. */
export function startOrderQueue(core: Core): Queue {
  const queue = createOrderQueue(
    core.bullConnection('seckill-bullmq'),
    core.config.redis.queuePrefix,
  );
  // Connection errors are already logged (throttled) by the connection; without a listener
  // BullMQ would print each one to the console.
  queue.on('error', (err) => core.logger.debug({ err: err.message }, 'order queue error'));
  core.lifecycle.add('order queue', () => queue.close());
  exitWhenBullInitFails(core)(queue, 'order queue');
  return queue;
}

/** The API side's services: every sale is submitted for persistence by checkout itself. */
export function apiServices(core: Core, queue: Queue): ApiServices {
  const c = core.config;
  const submitter = new OrderSubmitter(queue, {
    batchSize: c.orders.enqueueBatchSize,
    maxDelayMs: c.orders.enqueueMaxDelayMs,
    logger: core.logger,
  });
  core.lifecycle.add('order submitter', () => submitter.close());
  return {
    submitter,
    checkout: new Checkout({
      sale: core.inventory.sale,
      catalogue: core.inventory.catalogue,
      orders: submitter,
      ordersAtHome: core.pendingOrders,
      orderPersisted: async (id) => (await core.orderRows.findOrder(id)) !== undefined,
      voidTtlSeconds: c.sale.idempotencyTtlSeconds,
    }),
    products: core.products,
    orders: core.orders,
    ...payments(core),
    ...admissionAndRooms(core),
    idempotency: new IdempotencyStore(
      core.redis,
      core.keys,
      core.inventory.catalogue,
      c.sale.idempotencyTtlSeconds,
      c.sale.idempotencyLeaseMs,
      c.sale.idempotencyMaxPerUser,
      core.inventory.headroom,
    ),
  };
}

/**
 * Serves the API on HOST:PORT and registers the server's close (stop accepting, finish
 * in-flight requests) so it runs first at shutdown.
 */
export async function serveApi(
  core: Core,
  services: Services,
  queues: Queue[] = [],
  extra: { metricsText?: () => Promise<string> } = {},
): Promise<Server> {
  const { config } = core;
  const auth = config.auth;
  const access = new AdminAccess({
    sessions: new AdminSessionStore(core.redis, core.keys),
    adminToken: auth.adminToken,
    guessLimit: auth.guessLimit,
  });
  const feed = dashboardFeed(core, queues[0], extra.metricsText, {
    transcripts: services.draws?.transcripts,
    fairness: services.fairness,
  });
  const identityKeys = apiIdentityKeys(core);
  // POST /seckill's whole answer: Express's route and the fast path in front of it both call it
  const purchase = seckill({
    auth,
    purchase: new PurchaseService({
      checkout: services.checkout,
      idempotency: services.idempotency,
      admission: services.admission,
      bought: services.bought,
      logger: core.logger,
    }),
    tried: services.fairnessNotes && plainSaleTried(core, services.fairnessNotes),
    logger: core.logger,
  });
  const poll =
    services.waitingRoom && placePoll({ auth, room: services.waitingRoom, logger: core.logger });
  // the queue page, for a process with waiting rooms (its files read once, here)
  const queuePage = services.waitingRoom && {
    assets: loadQueuePageAssets(config.queuePage.themeCss),
    page: config.queuePage,
    auth,
    embedders: config.http.cors.origins,
    vapidPublicKey: config.push?.publicKey,
    decoy: services.fairnessNotes && decoyFollowed(core, services.fairnessNotes),
    challengeKinds: configuredKinds(config.admission.challenge),
  };
  const app = buildApp({
    http: config.http,
    admission: config.admission,
    logger: core.logger,
    registry: core.registry,
    ...extra,
    readiness: core.readiness,
    routes: [
      (app) =>
        mountDashboard(app, {
          access,
          feed,
          links: { queues: queues.length ? BULL_BOARD_PATH : undefined },
        }),
      (app) =>
        mountShop(app, {
          auth,
          seckill: purchase,
          products: services.products,
          admission: services.admission,
          door: services.door,
          logger: core.logger,
          benchRoutes: config.bench.routes,
        }),
      (app) =>
        mountRoom(app, { auth, room: services.waitingRoom, poll, turnPush: services.turnPush }),
      (app) => queuePage && mountQueuePage(app, queuePage),
      (app) => mountDraw(app, { auth, draws: services.draws }),
      (app) => mountOrders(app, { ...services, auth, access, pay: services.payments }),
      (app) => mountPaymentNotices(app, { payments: config.payments, notices: services.notices }),
      (app) =>
        mountStripeNotices(app, {
          payments: config.payments,
          stripe: new StripeNotices(services.notices),
        }),
      (app) =>
        mountAdmin(app, {
          access,
          products: services.products,
          queues,
          saleTokensOn: config.admission.saleTokenSecret !== undefined,
          challengeKinds: configuredKinds(config.admission.challenge),
          feed: core.feed,
          webhooks: core.webhooks,
          ...dropParts(core),
          identityKeys,
          fairness: services.fairness,
        }),
      (app) => mountOpenApi(app),
    ],
    ...(config.http.fastPath && { fastPath: { seckill: purchase, placePoll: poll } }),
  });
  // Node's default backlog (511) overflows when a sale's first thousands of connections arrive
  // at once: the kernel drops SYNs, and those clients, probes included, retry 1 s and 3 s later.
  const server = createApiServer(app.handler, config.http).listen({
    port: config.http.port,
    host: config.http.host,
    backlog: config.http.listenBacklog,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  core.lifecycle.add(
    'http server',
    async () => {
      // the load balancer's readiness probe sees 503 and stops sending; in-flight and late
      // requests are still served meanwhile
      app.drain();
      feed.close(); // open dashboard streams would hold the server open
      if (config.http.drainMs > 0) await new Promise((r) => setTimeout(r, config.http.drainMs));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await closed;
      app.close();
    },
    undefined,
    // the drain, then up to the usual step bound for the requests still running
    config.http.drainMs + 3_000,
  );
  const addr = server.address();
  core.logger.info(
    { url: typeof addr === 'object' && addr ? `http://${addr.address}:${addr.port}` : addr },
    'API listening',
  );
  return server;
}

/**
 * `seckill worker`'s own port (WORKER_PORT): /healthz, /readyz (Redis and PostgreSQL) and
 * /metrics (persisted orders, queue depth, outbox backlog, stock), for probes and scrapes.
 */
export async function serveWorkerProbes(core: Core): Promise<Server | undefined> {
  const { config } = core;
  if (config.http.workerPort === 0) return undefined;
  const app = buildApp({
    http: { ...config.http, cors: undefined }, // probes and /metrics: no browser calls them
    logger: core.logger,
    registry: core.registry,
    readiness: core.readiness,
  });
  const server = app.express.listen(config.http.workerPort, config.http.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  core.lifecycle.add('worker probes', async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
    app.close();
  });
  return server;
}

/** The buyer's payments and the providers' notices, over one payment window. */
function payments(core: Core): Pick<Services, 'payments' | 'notices'> {
  const window = paymentWindowDeps(core);
  const pay = new Payments(window, core.orders);
  const refused = new Counter({
    name: 'seckill_payment_notices_refused_total',
    help: 'Payment notices refused (recorded in payment_refusals for a person: a payment to refund, a refund or a dispute the order could not take), by provider and reason',
    labelNames: ['provider', 'reason'],
    registers: [core.registry],
  });
  // every series from 0: increase() over a window misses a counter's first step otherwise
  for (const provider of NOTICE_SOURCES) {
    for (const reason of REFUSAL_REASONS) refused.inc({ provider, reason }, 0);
  }
  const metrics = {
    refused: (provider: string, reason: string) => refused.inc({ provider, reason }),
  };
  return { payments: pay, notices: new PaymentNotices({ window, payments: pay, metrics }) };
}

/** What closing an order and returning its units needs (worker and API alike). */
export function paymentWindowDeps(core: Core): PaymentWindowDeps & { rows: PaymentRepository } {
  return {
    rows: new PaymentRepository(core.db),
    units: core.orderStore,
    catalogue: core.inventory.catalogue,
    returnFreesLimit: core.config.payments.returnFreesLimit,
    logger: core.logger,
  };
}

/** Worker side: persists batches, expires unpaid orders, runs the sweepers on their schedule. */
export async function startOrderWorker(core: Core, queue: Queue): Promise<Worker> {
  const c = core.config.orders;
  const paymentWindow = paymentWindowDeps(core);
  const persisted = new Counter({
    name: 'seckill_orders_persisted_total',
    help: 'Order rows inserted (redeliveries that inserted nothing are not counted)',
    registers: [core.registry],
  });
  const worker = createOrderWorker({
    connection: core.bullConnection('seckill-worker'),
    prefix: core.config.redis.queuePrefix,
    rows: core.orderRows,
    outbox: core.orderStore,
    concurrency: c.workerConcurrency,
    batchSize: c.workerBatchSize,
    lockMs: c.workerLockMs,
    logger: core.logger,
    onPersisted: (rows) => persisted.inc(rows),
    queue,
    expire: (orderId) => expireOrder(paymentWindow, orderId),
    background: (fn) => inBackground('order worker', fn),
  });
  // per process (each counts its own attempts): sum-correct across replicas
  const failedAttempts = new Counter({
    name: 'seckill_order_jobs_failed_total',
    help: 'Order job attempts that failed (persist, expire, sweep); BullMQ retries most of them',
    labelNames: ['kind'],
    registers: [core.registry],
  });
  worker.on('failed', (job) => failedAttempts.inc({ kind: job?.name ?? 'unknown' }));
  registerOrderGauges({ registry: core.registry, queue, products: core.productStore });
  // waits for the batches in hand; a batch cut short by a crash is redelivered instead
  core.lifecycle.add('order worker', () => worker.close());
  exitWhenBullInitFails(core)(worker, 'order worker');
  pauseWhileStoreFull(worker);
  await startUpkeep(core, queue, paymentWindow, failedAttempts);
  startEventDelivery(core);
  return worker;
}
