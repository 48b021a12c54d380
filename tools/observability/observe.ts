/**
 * The observed setup: the stack (2 API, 2 worker processes), a real Prometheus scraping them
 * every second with a test copy of deploy/prometheus/alerts.yaml, another service in the same
 * Prometheus with the same generic metric names (foreign.ts), a BullMQ handle on the order queue
 * (the truth the queue panel is compared with), and the dashboard's panel expressions as Grafana
 * sends them (dashboard.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { parse, stringify } from 'yaml';
import { ORDER_QUEUE } from '../../src/orders/jobs.js';
import { createRedisClient } from '../../src/redis/connection.js';
import { loadPanels, loadVariables, resolveVariables, type Panel } from './dashboard.js';
import { FOREIGN_JOB, startForeignService, type ForeignService } from './foreign.js';
import { startPrometheus, type RunningPrometheus } from './prometheus.js';
import { startObservedStack, type ObservedStack } from './stack.js';
import { waitFor } from './wait.js';

export const DEPLOY = join(import.meta.dirname, '..', '..', 'deploy');

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: Record<string, string>;
}

export type { Panel };

/**
 * Thresholds the test lowers to reach by construction (a few jobs, not 500): only the number at
 * the end of the expression changes.
 */
export const LOWERED: Record<string, [from: string, to: string]> = {
  SeckillQueueDepth: ['> 500', '> 5'],
  SeckillOutboxLag: ['> 1000', '> 5'],
};

/**
 * `for:` durations the test shortens so a run waits seconds, not minutes (the condition is the
 * shipped one).
 */
export const SHORTENED_FOR: Record<string, [from: string, to: string]> = {
  SeckillRedisMemoryHigh: ['1m', '10s'],
  // its condition already takes a minute without admissions (increase over [1m])
  SeckillRoomStalled: ['1m', '10s'],
};

export function loadRules(file = join(DEPLOY, 'prometheus', 'alerts.yaml')): {
  groups: Array<{ name: string; rules: AlertRule[] }>;
} {
  return parse(readFileSync(file, 'utf8'));
}

/** The rules as shipped, but for the LOWERED thresholds and the SHORTENED_FOR durations. */
export function testCopyOfRules(file?: string): ReturnType<typeof loadRules> {
  const doc = loadRules(file);
  for (const rule of doc.groups.flatMap((g) => g.rules)) {
    const shorter = SHORTENED_FOR[rule.alert];
    if (shorter) {
      if (rule.for !== shorter[0]) throw new Error(`${rule.alert}: expected for: ${shorter[0]}`);
      rule.for = shorter[1];
    }
    const lower = LOWERED[rule.alert];
    if (!lower) continue;
    const expr = rule.expr.trimEnd();
    if (!expr.endsWith(lower[0])) {
      throw new Error(`${rule.alert}: expected its expression to end with "${lower[0]}"`);
    }
    rule.expr = expr.slice(0, -lower[0].length) + lower[1];
  }
  return doc;
}

export interface Observed {
  dir: string;
  stack: ObservedStack;
  prom: RunningPrometheus;
  queue: Queue;
  rules: AlertRule[];
  panels: Panel[];
  /** what Grafana sends for each dashboard variable's "All" (`<name>:found`: its values) */
  variables: Record<string, string>;
  foreign: ForeignService;
  stop(): Promise<void>;
}

export async function observe(
  dir: string,
  o: { alertsFile?: string; dashboardDir?: string } = {},
): Promise<Observed> {
  const rulesDoc = testCopyOfRules(o.alertsFile);
  const rulesFile = join(dir, 'rules.yaml');
  writeFileSync(rulesFile, stringify(rulesDoc));
  const stack = await startObservedStack(dir);
  let prom: RunningPrometheus | undefined;
  let queue: Queue | undefined;
  let foreign: ForeignService | undefined;
  const connection = createRedisClient({ url: stack.redis.url }, { name: 'obs', role: 'bullmq' });
  connection.on('error', () => undefined); // a frozen Redis is part of the show
  const stop = async () => {
    await queue?.close().catch(() => undefined);
    connection.disconnect();
    await prom?.stop();
    await foreign?.stop();
    await stack.stop();
  };
  try {
    foreign = await startForeignService();
    prom = await startPrometheus({
      dir,
      ruleFiles: [rulesFile],
      targets: {
        'seckill-api': stack.apis.map((p) => p.target),
        'seckill-worker': stack.workers.map((p) => p.target),
        [FOREIGN_JOB]: [foreign.target],
      },
    });
    const p = prom;
    await waitFor(
      `all 4 seckill targets and the ${FOREIGN_JOB} target up in Prometheus`,
      async () => (await p.query('up == 1')).length === 5,
      60_000,
    );
    const dashboards = o.dashboardDir ?? join(DEPLOY, 'grafana');
    const variables = await waitFor(
      'the dashboard variables to resolve',
      () => resolveVariables(p, loadVariables(dashboards)),
      30_000,
    );
    queue = new Queue(ORDER_QUEUE, {
      connection,
      prefix: stack.env.QUEUE_PREFIX!,
    });
    queue.on('error', () => undefined); // a frozen Redis is part of the show
    return {
      dir,
      stack,
      prom,
      queue,
      rules: rulesDoc.groups.flatMap((g) => g.rules),
      panels: loadPanels(dashboards, variables),
      variables,
      foreign,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
