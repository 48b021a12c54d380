import { Counter, Histogram, type Registry } from 'prom-client';
import type { LockMetrics } from './runtime.js';

/** Prometheus metrics for a LockClient (labels stay low-cardinality: mode only, no lock names). */
export function promLockMetrics(registry: Registry): LockMetrics {
  const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
  const acquire = new Histogram({
    name: 'lock_acquire_duration_seconds',
    help: 'Latency of the call that acquired a lock',
    labelNames: ['mode'],
    buckets,
    registers: [registry],
  });
  const wait = new Histogram({
    name: 'lock_wait_duration_seconds',
    help: 'Time from the first attempt to holding the lock',
    labelNames: ['mode'],
    buckets,
    registers: [registry],
  });
  const contention = new Counter({
    name: 'lock_contention_total',
    help: 'First attempts that found the lock held by another owner',
    registers: [registry],
  });
  const renewals = new Counter({
    name: 'lock_renewals_total',
    help: 'Watchdog renewals by result',
    labelNames: ['result'],
    registers: [registry],
  });
  const lost = new Counter({
    name: 'lock_lost_total',
    help: 'Locks lost while held (lease expired, taken over, Redis unreachable)',
    registers: [registry],
  });
  return {
    acquired(event) {
      const mode = event.fair ? 'fair' : 'default';
      acquire.observe({ mode }, event.latencyMs / 1000);
      wait.observe({ mode }, event.waitedMs / 1000);
    },
    contended: () => contention.inc(),
    renewed: (ok) => renewals.inc({ result: ok ? 'ok' : 'failed' }),
    lost: () => lost.inc(),
  };
}
