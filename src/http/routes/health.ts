/**
 * The probes. `/healthz`: the process is alive (asks nothing). `/readyz`: Redis and PostgreSQL
 * answered, as last seen by a background check every second. A probe never waits on a store:
 * under overload (a store answering slowly behind thousands of sale commands) a probe that asked
 * on the spot would take seconds, and an orchestrator would restart a healthy process mid-sale.
 */
import type { IRouter } from 'express';
import { messageOf, ProblemError } from '../../errors.js';

/**
 * A dependency `/readyz` asks; `check` resolves when it answers, rejects with the reason. It may
 * resolve with a note: up, but degraded (a Redis Cluster with a shard down still sells the rest).
 */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void | string>;
}

/** Bounded so a dead dependency makes `/readyz` answer 503, never hang. */
const CHECK_TIMEOUT_MS = 1_000;
/** How often the checks run in the background. */
const CHECK_INTERVAL_MS = 1_000;
/** A result older than this is not trusted (the background check is stuck): 503. */
const STALE_AFTER_MS = 3 * CHECK_INTERVAL_MS + CHECK_TIMEOUT_MS;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

interface Result {
  at: number;
  results: Array<{ name: string; ok: boolean; reason?: string; degraded?: string }>;
}

/** Runs the checks now and then; the probe reads the last result. */
export class Readiness {
  private last: Result | undefined;
  private running: Promise<Result> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** shutting down: not ready, whatever the checks say (the load balancer takes us out) */
  draining = false;

  constructor(private readonly checks: ReadinessCheck[]) {}

  /** Starts the background checks (the first one right away). */
  start(): this {
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), CHECK_INTERVAL_MS);
    this.timer.unref();
    return this;
  }

  private refresh(): Promise<Result> {
    this.running ??= (async () => {
      const results = await Promise.all(
        this.checks.map(async (c) => {
          try {
            const degraded = await withTimeout(c.check(), CHECK_TIMEOUT_MS);
            return { name: c.name, ok: true, ...(degraded && { degraded }) };
          } catch (err) {
            return { name: c.name, ok: false, reason: messageOf(err) };
          }
        }),
      );
      this.last = { at: Date.now(), results };
      return this.last;
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  /** The latest result; asks now only when there is none yet (or it went stale). */
  async current(): Promise<Result> {
    const last = this.last;
    if (last && Date.now() - last.at < STALE_AFTER_MS) return last;
    return this.refresh();
  }

  /** What `/readyz` answers now, without asking: the last fresh result, every check up. */
  get ready(): boolean {
    const last = this.last;
    if (this.draining || !last || Date.now() - last.at >= STALE_AFTER_MS) return false;
    return last.results.every((r) => r.ok);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export function mountHealth(router: IRouter, readiness: Readiness): void {
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const answer = await readyAnswer(readiness);
    if (answer instanceof ProblemError) throw answer;
    res.json(answer);
  });
}

/** What `/readyz` answers: the ready document, or the problem to answer (503). */
export async function readyAnswer(
  readiness: Readiness,
): Promise<Record<string, unknown> | ProblemError> {
  if (readiness.draining) {
    return new ProblemError({
      status: 503,
      code: 'draining',
      title: 'Shutting down',
      detail: 'this process is finishing its requests before it stops',
    });
  }
  const { results } = await readiness.current();
  const down = results.filter((r) => !r.ok);
  const summary = Object.fromEntries(
    results.map((r) => [r.name, r.ok ? (r.degraded ? 'degraded' : 'up') : 'down']),
  );
  if (down.length === 0) {
    const notes = results.filter((r) => r.degraded).map((r) => `${r.name}: ${r.degraded}`);
    // degraded is still ready: taking this process out of rotation would not bring a shard back
    return {
      status: 'ready',
      checks: summary,
      ...(notes.length && { detail: notes.join('; ') }),
    };
  }
  return new ProblemError({
    status: 503,
    code: 'not-ready',
    title: 'Not ready',
    detail: down.map((d) => `${d.name}: ${d.reason ?? ''}`).join('; '),
    headers: { 'Retry-After': '1' },
    extensions: { checks: summary },
  });
}
