/**
 * API_PROCESSES=N: N HTTP processes on one port (node:cluster). The primary forks them, restarts
 * one that dies, stops them first at shutdown, and answers their `/metrics` with every process's
 * metrics (its own included) merged by prom-client's AggregatorRegistry. Each API process has its
 * own Redis connections and product views, kept in step by the sale notices (pub/sub).
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config } from '../config/index.js';
import { messageOf } from '../errors.js';
import { closeOnSignals, type Lifecycle } from '../lifecycle.js';
import { createLogger, type Logger } from '../log.js';
import { metricsJson, metricsText } from '../metrics.js';
import { createCore } from './core.js';
import { apiServices, serveApi, startOrderQueue } from './roles.js';

/** Messages between the primary and the API processes (IPC). */
type Message =
  | { type: 'seckill:listening' }
  | { type: 'seckill:metrics?'; id: number; names?: readonly string[] | undefined }
  | { type: 'seckill:metrics'; id: number; text: string }
  | { type: 'seckill:own-metrics?'; id: number; names?: readonly string[] | undefined }
  | { type: 'seckill:own-metrics'; id: number; metrics: unknown[] };

/** A process that does not answer a metrics request within this long is left out. */
const METRICS_TIMEOUT_MS = 2_000;
/** More crashes than this within the window: stop restarting (something is wrong for good). */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 30_000;

/** True in a process forked by {@link forkApiProcesses}. */
export function isApiProcess(): boolean {
  return cluster.isWorker;
}

function isMessage(message: unknown): message is Message {
  return (
    typeof message === 'object' &&
    message !== null &&
    String((message as Message).type).startsWith('seckill:')
  );
}

/**
 * In an API process: answers the primary's requests for this process's metrics, and returns what
 * `/metrics` serves: all processes' metrics, asked of the primary (this process's own alone if
 * the primary does not answer in time).
 */
function apiProcessMetrics(registry: Registry): (names?: readonly string[]) => Promise<string> {
  let seq = 0;
  const waiting = new Map<number, (text: string) => void>();
  process.on('message', (m: unknown) => {
    if (!isMessage(m)) return;
    if (m.type === 'seckill:own-metrics?') {
      void metricsJson(registry, m.names).then((metrics) =>
        process.send?.({ type: 'seckill:own-metrics', id: m.id, metrics } satisfies Message),
      );
    } else if (m.type === 'seckill:metrics') {
      waiting.get(m.id)?.(m.text);
      waiting.delete(m.id);
    }
  });
  return (names) =>
    new Promise((resolve) => {
      const id = ++seq;
      const timer = setTimeout(() => {
        waiting.delete(id);
        void metricsText(registry, names).then(resolve);
      }, METRICS_TIMEOUT_MS);
      waiting.set(id, (text) => {
        clearTimeout(timer);
        resolve(text);
      });
      process.send?.({ type: 'seckill:metrics?', id, names } satisfies Message);
    });
}

/**
 * The life of one forked API process: its own core (connections, product views), the API, and a
 * clean close on SIGINT/SIGTERM; it tells the primary once it listens.
 */
export async function serveApiProcess(config: Config): Promise<void> {
  const logger = createLogger(config);
  const core = createCore(config, logger);
  closeOnSignals(core.lifecycle, logger, config.http.shutdownTimeoutMs);
  const queue = startOrderQueue(core);
  await serveApi(core, apiServices(core, queue), [queue], {
    metricsText: apiProcessMetrics(core.registry),
  });
  process.send?.({ type: 'seckill:listening' } satisfies Message);
}

export interface ApiProcesses {
  /** Resolves once every process listens; rejects if one exits before it does. */
  ready: Promise<void>;
}

/**
 * In the primary: forks `count` API processes running this same command (each sees
 * `isApiProcess()`), and registers their stop with the lifecycle (it runs before anything
 * registered earlier: API processes stop before the workers and stores they depend on).
 */
export function forkApiProcesses(opts: {
  count: number;
  /** the primary's own metrics, merged into every `/metrics` answer */
  registry: Registry;
  logger: Logger;
  lifecycle: Lifecycle;
  /** how long the API processes get to finish in-flight requests at shutdown */
  stopTimeoutMs: number;
}): ApiProcesses {
  const { logger, lifecycle } = opts;
  const crashes: number[] = [];
  let listening = 0;
  let settle!: { resolve: () => void; reject: (err: Error) => void };
  const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));

  const onMessage = (worker: Worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === 'seckill:listening') {
      if (++listening === opts.count) settle.resolve();
    } else if (message.type === 'seckill:metrics?') {
      void allMetrics(opts.registry, message.names).then(
        (text) => worker.send({ type: 'seckill:metrics', id: message.id, text } satisfies Message),
        (err: unknown) => logger.warn({ err: messageOf(err) }, 'metrics aggregation failed'),
      );
    }
  };

  // Each API process accepts its own connections from the shared socket. Node's default on Linux
  // (round-robin) has the primary accept every connection and hand it over one IPC round trip at
  // a time: during a burst, and whenever the primary is busy (it runs the order workers under
  // `up`), every connection, probes included, waits in its line (measured: probes unanswered for
  // 15 s under 2 000 connections at once). NODE_CLUSTER_SCHED_POLICY, when set, still decides
  // (bench:burst compares both).
  if (!process.env.NODE_CLUSTER_SCHED_POLICY) cluster.schedulingPolicy = cluster.SCHED_NONE;
  const fork = () => {
    const worker = cluster.fork();
    let up = false;
    worker.on('message', (m: unknown) => {
      if (isMessage(m) && m.type === 'seckill:listening') up = true;
      onMessage(worker, m);
    });
    worker.on('exit', (code, signal) => {
      if (lifecycle.isClosing || worker.exitedAfterDisconnect) return;
      const why = signal ?? `code ${code}`;
      if (!up && listening < opts.count) {
        settle.reject(new Error(`an API process exited (${why}) before it listened`));
        return;
      }
      if (up) listening--;
      const now = Date.now();
      crashes.push(now);
      while (crashes[0]! < now - RESTART_WINDOW_MS) crashes.shift();
      if (crashes.length > MAX_RESTARTS) {
        logger.fatal(
          { pid: worker.process.pid, exit: why },
          `API processes crashed ${crashes.length} times in ${RESTART_WINDOW_MS / 1000} s: not restarting`,
        );
        return;
      }
      logger.error({ pid: worker.process.pid, exit: why }, 'an API process died: starting another');
      setTimeout(() => !lifecycle.isClosing && fork(), 500).unref();
    });
  };
  for (let i = 0; i < opts.count; i++) fork();

  lifecycle.add(
    'api processes',
    async () => {
      const live = Object.values(cluster.workers ?? {}).filter(
        (w): w is Worker => !!w && !w.isDead(),
      );
      await Promise.all(
        live.map(
          (w) =>
            new Promise<void>((resolve) => {
              w.once('exit', () => resolve());
              // Ctrl-C reached them too (same process group); a repeat within 2 s is not a force
              w.process.kill('SIGTERM');
            }),
        ),
      );
    },
    () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
    },
    opts.stopTimeoutMs,
  );
  return { ready };
}

/** Every API process's metrics and the primary's, merged (counters and histograms summed). */
async function allMetrics(own: Registry, names?: readonly string[]): Promise<string> {
  const workers = Object.values(cluster.workers ?? {}).filter(
    (w): w is Worker => !!w && !w.isDead(),
  );
  const replies = await Promise.all(workers.map((w) => askOwnMetrics(w, names)));
  const all = [await metricsJson(own, names), ...replies.filter((r) => r !== undefined)];
  return AggregatorRegistry.aggregate(
    all as Parameters<typeof AggregatorRegistry.aggregate>[0],
  ).metrics();
}

let askSeq = 0;

function askOwnMetrics(
  worker: Worker,
  names: readonly string[] | undefined,
): Promise<unknown[] | undefined> {
  const id = ++askSeq;
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(undefined), METRICS_TIMEOUT_MS);
    const onMessage = (message: unknown) => {
      if (isMessage(message) && message.type === 'seckill:own-metrics' && message.id === id)
        done(message.metrics);
    };
    const done = (metrics: unknown[] | undefined) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      resolve(metrics);
    };
    worker.on('message', onMessage);
    worker.send({ type: 'seckill:own-metrics?', id, names } satisfies Message);
  });
}
