/**
 * One prom-client registry per process (per app in tests). Modules register their own metrics
 * on it; `/metrics` exposes it.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

export { Registry };

export function createRegistry(opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}

export interface HttpMetrics {
  /** `problem`: the problem+json code of an error answer (e.g. store-unavailable) */
  observe(method: string, route: string, status: number, seconds: number, problem?: string): void;
}

export function httpMetrics(registry: Registry): HttpMetrics {
  const labelNames = ['method', 'route', 'status'] as const;
  const total = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route and status',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency, by route and status',
    labelNames,
    // Flash-sale answers are sub-millisecond to tens of ms; the tail matters most.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  // The status alone cannot tell a store outage (503 store-unavailable) from the product's own
  // "try again" answers (503 lock-timeout, draining): alerts need the code.
  const problems = new Counter({
    name: 'http_problems_total',
    help: 'Error answers (problem+json) by route and problem code',
    labelNames: ['route', 'code'],
    registers: [registry],
  });
  const problemChildren = new Map<string, { inc(): void }>();
  // Label children per (method, route, status), made once: prom-client hashes a label object on
  // every call otherwise, which costs more than the observation.
  const children = new Map<string, { inc(): void; observe(value: number): void }>();
  return {
    observe(method, route, status, seconds, problem) {
      if (problem) {
        // a sold-out flood is thousands of 409s a second: one label child per pair, made once
        const pk = `${route} ${problem}`;
        let pc = problemChildren.get(pk);
        if (!pc) problemChildren.set(pk, (pc = problems.labels({ route, code: problem })));
        pc.inc();
      }
      const key = `${method} ${route} ${status}`;
      let c = children.get(key);
      if (!c) {
        const labels = { method, route, status: String(status) };
        const counter = total.labels(labels);
        const histogram = duration.labels(labels);
        c = { inc: () => counter.inc(), observe: (value) => histogram.observe(value) };
        children.set(key, c);
      }
      c.inc();
      c.observe(seconds);
    },
  };
}

/**
 * A scrape answers within this even while Redis does not (BullMQ's connection waits for Redis
 * without bound): the shared-state series are then left out, and the rest of /metrics (the
 * readiness gauge among it) still reaches Prometheus, so the target is not reported down.
 */
export const GAUGE_READ_TIMEOUT_MS = 750;

/** `p`, or a rejection naming `what` once GAUGE_READ_TIMEOUT_MS has passed (for collect()). */
export function boundedRead<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no answer within ${GAUGE_READ_TIMEOUT_MS} ms`)),
      GAUGE_READ_TIMEOUT_MS,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
