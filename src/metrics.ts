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

type LabelKey = string | number;

/**
 * Label children keyed by up to three label values, found without building a key string: a
 * template key costs ~0.5 us a lookup (made, flattened and hashed every time), which a flood of
 * refusals pays per counter.
 */
export class LabelChildren<V> {
  private readonly root = new Map<LabelKey, Map<LabelKey, Map<LabelKey, V>>>();

  find(first: LabelKey, second: LabelKey, third: LabelKey = ''): V | undefined {
    return this.root.get(first)?.get(second)?.get(third);
  }

  add(first: LabelKey, second: LabelKey, third: LabelKey, child: V): V {
    let bySecond = this.root.get(first);
    if (!bySecond) this.root.set(first, (bySecond = new Map()));
    let byThird = bySecond.get(second);
    if (!byThird) bySecond.set(second, (byThird = new Map()));
    byThird.set(third, child);
    return child;
  }
}

/** Increments of one label child, not yet handed to prom-client. */
export interface Tally {
  n: number;
}

/**
 * A counter whose increments are added up here and handed to prom-client when it is read (its
 * collect hook runs before every scrape or get()): a hot path pays an addition, not prom-client's
 * label hashing and checks (~0.4 us an increment; a sold-out refusal makes three). What it counts
 * is unchanged: the same series, the same values at every read.
 */
export function batchedCounter<T extends string>(config: {
  name: string;
  help: string;
  labelNames: readonly T[];
  registers: Registry[];
}): { child(labels: Record<T, string>): Tally } {
  const tallies: Array<Tally & { labels: Record<T, string> }> = [];
  const counter: Counter<T> = new Counter<T>({
    ...config,
    collect() {
      for (const t of tallies) {
        if (t.n === 0) continue;
        counter.inc(t.labels, t.n);
        t.n = 0;
      }
    },
  });
  return {
    child(labels) {
      const t = { labels, n: 0 };
      tallies.push(t);
      return t;
    },
  };
}

export interface HttpMetrics {
  /** `problem`: the problem+json code of an error answer (e.g. store-unavailable) */
  observe(method: string, route: string, status: number, seconds: number, problem?: string): void;
}

export function httpMetrics(registry: Registry): HttpMetrics {
  const labelNames = ['method', 'route', 'status'] as const;
  const total = batchedCounter({
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
  const problems = batchedCounter({
    name: 'http_problems_total',
    help: 'Error answers (problem+json) by route and problem code',
    labelNames: ['route', 'code'],
    registers: [registry],
  });
  const problemChildren = new LabelChildren<Tally>();
  // Label children per (method, route, status), made once: prom-client hashes a label object on
  // every call otherwise, which costs more than the observation.
  const children = new LabelChildren<{ count: Tally; observe(value: number): void }>();
  return {
    observe(method, route, status, seconds, problem) {
      if (problem) {
        // a sold-out flood is thousands of 409s a second: one label child per pair, made once
        const pc =
          problemChildren.find(route, problem) ??
          problemChildren.add(route, problem, '', problems.child({ route, code: problem }));
        pc.n++;
      }
      let c = children.find(method, route, status);
      if (!c) {
        const labels = { method, route, status: String(status) };
        const histogram = duration.labels(labels);
        c = children.add(method, route, status, {
          count: total.child(labels),
          observe: (value) => histogram.observe(value),
        });
      }
      c.count.n++;
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

/**
 * This process's metrics as JSON: all of them, or only `names` (their get() collects nothing
 * else: no gauge that reads Redis or PostgreSQL runs).
 */
export async function metricsJson(registry: Registry, names?: readonly string[]) {
  if (!names) return registry.getMetricsAsJSON();
  const got = await Promise.all(names.map((n) => registry.getSingleMetric(n)?.get()));
  return got.filter((m) => m !== undefined);
}

/** This process's metrics text: all of them, or only `names` (see {@link metricsJson}). */
export async function metricsText(registry: Registry, names?: readonly string[]) {
  if (!names) return registry.metrics();
  const known = names.filter((n) => registry.getSingleMetric(n));
  return (await Promise.all(known.map((n) => registry.getSingleMetricAsString(n)))).join('\n');
}
