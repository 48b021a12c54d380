import type { IRouter } from 'express';
import { messageOf, ProblemError } from '../errors.js';

/** A dependency `/readyz` asks; `check` resolves when it answers, rejects with the reason. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

/** Bounded so a dead dependency makes `/readyz` answer 503, never hang. */
const CHECK_TIMEOUT_MS = 1_000;

function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function mountHealth(router: IRouter, checks: ReadinessCheck[]): void {
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const results = await Promise.all(
      checks.map(async (c) => {
        try {
          await withTimeout(c.check(), CHECK_TIMEOUT_MS);
          return { name: c.name, ok: true as const };
        } catch (err) {
          return { name: c.name, ok: false as const, reason: messageOf(err) };
        }
      }),
    );
    const down = results.filter((r) => !r.ok);
    const summary = Object.fromEntries(results.map((r) => [r.name, r.ok ? 'up' : 'down']));
    if (down.length === 0) {
      res.json({ status: 'ready', checks: summary });
      return;
    }
    throw new ProblemError({
      status: 503,
      code: 'not-ready',
      title: 'Not ready',
      detail: down.map((d) => `${d.name}: ${'reason' in d ? d.reason : ''}`).join('; '),
      headers: { 'Retry-After': '1' },
      extensions: { checks: summary },
    });
  });
}
