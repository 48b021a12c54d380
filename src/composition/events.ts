/**
 * The worker side of order events: the relay on its BullMQ job scheduler (every
 * EVENT_RELAY_INTERVAL_MS, one run at a time), the webhook deliveries (WEBHOOK_CONCURRENCY lanes
 * at once), their metrics, and their closes at shutdown (deliveries in flight finish first).
 */
import type { Queue } from 'bullmq';
import {
  createDeliveryWorker,
  createEventQueues,
  createRelayWorker,
  createSender,
  deliverLane,
  EndpointsRepository,
  EVENT_JOB,
  EventsRepository,
  LanesRepository,
  queueLanes,
  registerDeliveryMetrics,
  relay,
  RELAY_SCHEDULER,
  type EndpointBacklog,
} from '../events/index.js';
import { exitWhenBullInitFails } from './bull-init.js';
import type { Core } from './core.js';
import { whenRedisAnswers } from './when-redis-answers.js';

/** The receiver rules of the config (who may be sent to). */
export const receiverRules = (core: Pick<Core, 'config'>) => ({
  allowPrivate: core.config.events.webhook.allowPrivate,
  httpHosts: core.config.events.webhook.httpHosts,
});

/** One read of every endpoint's backlog per second at most, whoever asks (two gauges). */
function cachedBacklog(endpoints: EndpointsRepository) {
  let last: { at: number; value: Promise<Array<EndpointBacklog & { id: string }>> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > 1_000) {
      last = { at: Date.now(), value: endpoints.list() };
    }
    return last.value;
  };
}

export async function startEventDelivery(core: Core): Promise<{ webhooks: Queue }> {
  const c = core.config.events;
  const prefix = core.config.redis.queuePrefix;
  const exitOnInit = exitWhenBullInitFails(core);
  const queues = createEventQueues(core.bullConnection('seckill-events'), prefix);
  for (const [name, queue] of Object.entries(queues)) {
    queue.on('error', (err) => core.logger.debug({ err: err.message }, `${name} queue error`));
    core.lifecycle.add(`${name} queue`, () => queue.close());
    exitOnInit(queue, `${name} queue`);
  }
  const endpoints = new EndpointsRepository(core.db);
  const lanes = new LanesRepository(core.db);
  const events = new EventsRepository(core.db);
  const sender = createSender(receiverRules(core), c.webhook.timeoutMs);
  const metrics = registerDeliveryMetrics(core.registry, cachedBacklog(endpoints));

  const deliveries = createDeliveryWorker({
    connection: core.bullConnection('seckill-webhook-worker'),
    prefix,
    concurrency: c.webhook.concurrency,
    // a lane sends one event at a time, each within the timeout; BullMQ renews the lock meanwhile
    lockMs: Math.max(30_000, 3 * c.webhook.timeoutMs),
    logger: core.logger,
    deliver: (ref) =>
      deliverLane(
        {
          endpoints,
          lanes,
          events,
          send: sender.send,
          scheduleMs: c.webhook.retryScheduleMs,
          metrics,
        },
        ref,
      ),
  });
  const relayWorker = createRelayWorker({
    connection: core.bullConnection('seckill-relay-worker'),
    prefix,
    logger: core.logger,
    run: () => relay({ endpoints, lanes, deliver: (due) => queueLanes(queues.webhooks, due) }),
  });
  // closed in reverse: the relay first (nothing new is queued), then the deliveries in flight
  // finish (each within the timeout)
  core.lifecycle.add(
    'webhook deliveries',
    async () => {
      await deliveries.close();
      sender.close();
    },
    undefined,
    c.webhook.timeoutMs + 3_000,
  );
  core.lifecycle.add('event relay', () => relayWorker.close());
  exitOnInit(relayWorker, 'event relay');
  exitOnInit(deliveries, 'webhook deliveries');
  await whenRedisAnswers(core, 'scheduling the event relay', () =>
    queues.events.upsertJobScheduler(
      RELAY_SCHEDULER,
      { every: c.relayIntervalMs },
      { name: EVENT_JOB.relay, opts: { removeOnComplete: true, removeOnFail: 100 } },
    ),
  );
  return { webhooks: queues.webhooks };
}
