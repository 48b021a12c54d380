/**
 * What a worker process runs of events (an order's, a product's), wired: the relay on a timer of
 * its own (every EVENT_RELAY_INTERVAL_MS while there is work, one run at a time across the
 * processes), the webhook deliveries (WEBHOOK_CONCURRENCY lanes at once), their metrics, and how
 * they stop (the relay first, then the deliveries in flight finish). The composition root starts
 * it and registers its closes and watches.
 */
import type { ConnectionOptions, Queue, Worker } from 'bullmq';
import type { EventsConfig } from '../config/events.js';
import type { Db } from '../db/index.js';
import type { Logger } from '../log.js';
import type { Registry } from '../metrics.js';
import { inBackground } from '../redis/background.js';
import {
  ackBatcher,
  createDeliveryWorker,
  createEventQueues,
  createSender,
  deliverBatch,
  deliverLane,
  EndpointSlots,
  holdDelay,
  queueBatches,
  queueLanes,
  registerDeliveryMetrics,
  stallMsFor,
} from './delivery/index.js';
import { EndpointsRepository, type Endpoint, type EndpointBacklog } from './endpoints/index.js';
import { LanesRepository, type LaneRef } from './lanes/index.js';
import { relay, startRelayLoop } from './relay/index.js';

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
 * An active endpoint as read at most this long ago: deliveries ask for it per batch. A disable or
 * a rotation reaches them within it; an enable at once (a disabled endpoint is read each time,
 * else the lanes an enable queues would find it disabled and wait to be found stranded).
 */
const ENDPOINT_CACHE_MS = 500;

function cachedEndpoints(endpoints: EndpointsRepository) {
  const read = new Map<string, { at: number; value: Promise<Endpoint | undefined> }>();
  return (id: string) => {
    const last = read.get(id);
    if (last && Date.now() - last.at <= ENDPOINT_CACHE_MS) return last.value;
    const value = endpoints.get(id);
    read.set(id, { at: Date.now(), value });
    value.then(
      (endpoint) => endpoint?.status !== 'active' && read.delete(id),
      () => read.delete(id),
    );
    return value;
  };
}

/**
 * How often an endpoint found down gets one lane tried: the schedule's first delay (5 s by
 * default), at least 1 s, at most 30 s. A 30 s outage then costs about that, not the schedule's
 * second step (5 min).
 */
const probeEveryMs = (scheduleMs: readonly number[]) =>
  Math.min(30_000, Math.max(1_000, scheduleMs[0] ?? 5_000));

export interface EventWorkerDeps {
  db: Db;
  config: EventsConfig;
  /** BullMQ's key prefix */
  queuePrefix: string;
  /** a Redis connection of its own for a BullMQ Queue or Worker */
  connection(name: string): ConnectionOptions;
  logger: Logger;
  registry: Registry;
}

export interface EventWorker {
  /** the webhooks queue and its worker (the composition root watches their first connection) */
  queue: Queue;
  worker: Worker;
  /** stops the relay's timer: nothing new is queued once a run under way has ended */
  closeRelay(): Promise<void>;
  /** waits for the deliveries in flight (each within WEBHOOK_TIMEOUT_MS), then the sender */
  closeDeliveries(): Promise<void>;
}

export function startEventWorker(deps: EventWorkerDeps): EventWorker {
  const c = deps.config;
  const prefix = deps.queuePrefix;
  const queues = createEventQueues(deps.connection('seckill-events'), prefix);
  queues.webhooks.on('error', (err) =>
    deps.logger.debug({ err: err.message }, 'webhooks queue error'),
  );
  const endpoints = new EndpointsRepository(deps.db);
  const lanes = new LanesRepository(deps.db);
  const sender = createSender(
    { allowPrivate: c.webhook.allowPrivate, httpHosts: c.webhook.httpHosts },
    c.webhook.timeoutMs,
  );
  // WEBHOOK_CONCURRENCY deliveries at once in this process, shared among the endpoints
  const slots = new EndpointSlots({
    size: c.webhook.concurrency,
    stallMs: stallMsFor(c.webhook.timeoutMs),
    holdMs: (quietForMs) => holdDelay(c.webhook.retryScheduleMs, quietForMs),
  });
  const metrics = registerDeliveryMetrics(deps.registry, cachedBacklog(endpoints), () =>
    slots.limits(),
  );

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
    endpoint,
    enter: (endpointId: string) => slots.enter(endpointId),
    hold: async (held: ReadonlyArray<LaneRef & { delayMs: number }>) => {
      await lanes.hold(held, 'held back: the endpoint is not answering');
      for (const h of held) metrics.held(h.endpointId);
    },
  };
  const deliveries = createDeliveryWorker({
    connection: deps.connection('seckill-webhook-worker'),
    prefix,
    // jobs in hand: twice the slots, so that lanes waiting for a busy endpoint leave room for
    // other endpoints' jobs to be fetched
    concurrency: 2 * c.webhook.concurrency,
    // a lane sends one event at a time, each within the timeout; BullMQ renews the lock meanwhile
    lockMs: Math.max(30_000, 3 * c.webhook.timeoutMs),
    logger: deps.logger,
    lane: (ref) =>
      deliverLane(
        {
          ...shared,
          dueLane: async (ref, types) =>
            (await lanes.dueLanes(ref.endpointId, [ref.subject], types))[0],
          catchUp: (ref, from) => lanes.catchUp(ref, from),
        },
        ref,
      ),
    batch: (job) =>
      deliverBatch(
        {
          ...shared,
          dueLanes: (id, subjects, types) => lanes.dueLanes(id, subjects, types),
          ownJob: (ref) => queueLanes(queues.webhooks, [ref]),
        },
        job.endpointId,
        job.subjects,
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
          probeEveryMs: probeEveryMs(c.webhook.retryScheduleMs),
          deliver: (due) => queueBatches(queues.webhooks, due),
          deliverEach: (due) => queueLanes(queues.webhooks, due),
        }),
      onError: (err) =>
        deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'event relay failed; the next run takes over',
        ),
    }),
  );
  return {
    queue: queues.webhooks,
    worker: deliveries,
    closeRelay: () => relayLoop.close(),
    async closeDeliveries() {
      await deliveries.close();
      sender.close();
    },
  };
}
