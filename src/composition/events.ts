/**
 * A worker process's order events (events/worker.ts: the relay and the webhook deliveries),
 * wired into the process: its closes at shutdown, in reverse (the relay first, so nothing new is
 * queued, then the deliveries in flight finish within the timeout), and its BullMQ watches.
 */
import { startEventWorker } from '../events/index.js';
import { exitWhenBullInitFails, pauseWhileStoreFull } from './bull-init.js';
import type { Core } from './core.js';

export function startEventDelivery(core: Core): void {
  const events = startEventWorker({
    db: core.db,
    config: core.config.events,
    queuePrefix: core.config.redis.queuePrefix,
    connection: (name) => core.bullConnection(name),
    logger: core.logger,
    registry: core.registry,
  });
  const exitOnInit = exitWhenBullInitFails(core);
  core.lifecycle.add('webhooks queue', () => events.queue.close());
  exitOnInit(events.queue, 'webhooks queue');
  core.lifecycle.add(
    'webhook deliveries',
    () => events.closeDeliveries(),
    undefined,
    core.config.events.webhook.timeoutMs + 3_000,
  );
  core.lifecycle.add('event relay', () => events.closeRelay());
  exitOnInit(events.worker, 'webhook deliveries');
  pauseWhileStoreFull(events.worker);
}
