/**
 * The worker side of order events: the relay on a timer of its own (relay-loop.ts: every
 * EVENT_RELAY_INTERVAL_MS while there is work, one run at a time), the webhook deliveries
 * (WEBHOOK_CONCURRENCY lanes at once), their metrics, and their closes at shutdown (deliveries in
 * flight finish first).
 */
import type { Queue } from 'bullmq';
import {
  ackBatcher,
  createDeliveryWorker,
  createEventQueues,
  createSender,
  deliverBatch,
  deliverLane,
  EndpointsRepository,
  EventsRepository,
  LanesRepository,
  queueBatches,
  queueLanes,
  registerDeliveryMetrics,
  relay,
  slots,
  startRelayLoop,
  type Endpoint,
  type EndpointBacklog,
  type LaneRef,
} from '../events/index.js';
import { inBackground } from '../redis/background.js';
import { exitWhenBullInitFails, pauseWhileStoreFull } from './bull-init.js';
import type { Core } from './core.js';

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

/**
 * An endpoint as read at most this long ago: deliveries ask for it per batch. A disable or a
 * rotation reaches them within it.
 */
const ENDPOINT_CACHE_MS = 500;

function cachedEndpoints(endpoints: EndpointsRepository) {
  const read = new Map<string, { at: number; value: Promise<Endpoint | undefined> }>();
  return (id: string) => {
    const last = read.get(id);
    if (last && Date.now() - last.at <= ENDPOINT_CACHE_MS) return last.value;
    const value = endpoints.get(id);
    read.set(id, { at: Date.now(), value });
    value.catch(() => read.delete(id));
    return value;
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

  const endpoint = cachedEndpoints(endpoints);
  const ack = ackBatcher((acks) => lanes.ackMany(acks));
  const shared = {
    endpoints,
    lanes: {
      ack: (ref: LaneRef, from: number, version: number, nextPendingSince: Date | null) =>
        ack({ ...ref, from, version, nextPendingSince }),
      failed: lanes.failed.bind(lanes),
      markDead: lanes.markDead.bind(lanes),
    },
    send: sender.send,
    scheduleMs: c.webhook.retryScheduleMs,
    metrics,
  };
  // WEBHOOK_CONCURRENCY deliveries at once in this process, whichever jobs they come from
  const slot = slots(c.webhook.concurrency);
  const deliveries = createDeliveryWorker({
    connection: core.bullConnection('seckill-webhook-worker'),
    prefix,
    concurrency: c.webhook.concurrency,
    // a lane sends one event at a time, each within the timeout; BullMQ renews the lock meanwhile
    lockMs: Math.max(30_000, 3 * c.webhook.timeoutMs),
    logger: core.logger,
    lane: (ref) =>
      slot(() =>
        deliverLane(
          {
            ...shared,
            endpoint,
            lane: (ref) => lanes.get(ref),
            due: async (orderId, version, types) =>
              (await events.orderEventsAfter(orderId, version)).filter((e) =>
                types.includes(e.type),
              ),
            catchUp: (ref, from) => lanes.catchUp(ref, from),
          },
          ref,
        ),
      ),
    batch: (job) =>
      deliverBatch(
        {
          ...shared,
          endpoint,
          dueLanes: (id, orderIds, types) => lanes.dueLanes(id, orderIds, types),
          retryLater: (ref, delayMs) => queueLanes(queues.webhooks, [ref], delayMs),
          slot,
        },
        job.endpointId,
        job.orderIds,
      ),
  });
  // a loop of its own: its commands are no request's (redis/background.ts)
  const relayLoop = inBackground('event relay', () =>
    startRelayLoop({
      intervalMs: c.relayIntervalMs,
      run: () =>
        relay({
          endpoints,
          lanes,
          deliver: (due) => queueBatches(queues.webhooks, due),
          deliverEach: (due) => queueLanes(queues.webhooks, due),
        }),
      onError: (err) =>
        core.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'event relay failed; the next run takes over',
        ),
    }),
  );
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
  core.lifecycle.add('event relay', () => relayLoop.close());
  exitOnInit(deliveries, 'webhook deliveries');
  pauseWhileStoreFull(deliveries);
  return { webhooks: queues.webhooks };
}
