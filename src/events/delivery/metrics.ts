/**
 * Webhook delivery metrics (per worker process; sum the counters across processes, take the
 * max of the gauges): events delivered, failed attempts by reason, dead letters, endpoints
 * disabled by a 410, lanes held back, the delivery lag (commit to 2xx), each endpoint's limit of
 * the process's slots, and per endpoint, read from PostgreSQL at each scrape, the age of the
 * oldest event not yet acknowledged and the dead letters waiting.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from '../../metrics.js';
import type { DeliveryMetrics } from './lane-attempt.js';
import type { EndpointBacklog } from '../endpoints/index.js';

export function registerDeliveryMetrics(
  registry: Registry,
  backlog: () => Promise<Array<EndpointBacklog & { id: string }>>,
  /** each endpoint's limit of this process's delivery slots (endpoint-slots.ts) */
  limits: () => ReadonlyMap<string, number>,
): DeliveryMetrics & { held(endpointId: string): void } {
  const delivered = new Counter({
    name: 'seckill_webhook_deliveries_total',
    help: 'Events a receiver acknowledged (2xx)',
    labelNames: ['endpoint'],
    registers: [registry],
  });
  const failed = new Counter({
    name: 'seckill_webhook_failed_attempts_total',
    help: 'Webhook attempts that failed, by reason (4xx, 5xx, timeout, network, refused); each is retried on the schedule',
    labelNames: ['endpoint', 'reason'],
    registers: [registry],
  });
  const dead = new Counter({
    name: 'seckill_webhook_dead_letters_total',
    help: "Lanes dead-lettered: an event's last retry failed (it and the order's later events wait for a replay)",
    labelNames: ['endpoint'],
    registers: [registry],
  });
  const disabled = new Counter({
    name: 'seckill_webhook_endpoints_disabled_total',
    help: 'Endpoints disabled because their receiver answered 410 Gone',
    labelNames: ['endpoint'],
    registers: [registry],
  });
  const held = new Counter({
    name: 'seckill_webhook_held_total',
    help: 'Lanes held back without an attempt: their endpoint was not answering and had its one attempt in flight (each is due again later)',
    labelNames: ['endpoint'],
    registers: [registry],
  });
  new Gauge({
    name: 'seckill_webhook_endpoint_slots',
    help: "An endpoint's limit of this worker process's WEBHOOK_CONCURRENCY delivery slots: +1 per answer, halved per attempt without one",
    labelNames: ['endpoint'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [endpoint, limit] of limits()) this.set({ endpoint }, limit);
    },
  });
  const lag = new Histogram({
    name: 'seckill_webhook_delivery_seconds',
    help: "From an event's commit to its receiver's 2xx",
    labelNames: ['endpoint'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 36000],
    registers: [registry],
  });
  new Gauge({
    name: 'seckill_webhook_oldest_pending_seconds',
    help: 'Age of the oldest event an endpoint has not acknowledged (dead letters aside); 0 when none',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const e of await backlog().catch(() => [])) {
        const age = e.oldestPendingAt ? (Date.now() - e.oldestPendingAt.getTime()) / 1_000 : 0;
        this.set({ endpoint: e.id }, Math.max(0, age));
      }
    },
  });
  new Gauge({
    name: 'seckill_webhook_dead_letters',
    help: 'Orders whose delivery to an endpoint is dead-lettered, waiting for a replay',
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const e of await backlog().catch(() => [])) this.set({ endpoint: e.id }, e.deadLetters);
    },
  });
  return {
    delivered: (endpoint, seconds) => {
      delivered.inc({ endpoint });
      lag.observe({ endpoint }, Math.max(0, seconds));
    },
    failedAttempt: (endpoint, reason) => failed.inc({ endpoint, reason }),
    deadLettered: (endpoint) => dead.inc({ endpoint }),
    disabled: (endpoint) => disabled.inc({ endpoint }),
    held: (endpoint) => held.inc({ endpoint }),
  };
}
