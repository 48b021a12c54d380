/**
 * Waiting until a benchmark's processes have nothing left to do: a row's figures must not pay for
 * what the row before it left behind (a worker's backlog, the event relay reading the feed, a
 * PostgreSQL autovacuum or checkpoint after a burst of inserts), nor the next row start while
 * this one's work still runs.
 */
import { cpuSeconds, type Tiers } from './cpu.js';

/** CPU (cores) under which a process counts as idle: its timers' polls, no backlog. */
export const QUIET_CORES = 0.05;

/**
 * Resolves once each of the processes used less than `cores` of CPU over a window of
 * `windowMs`, twice in a row (a poll landing in one window must not pass for idle work).
 * @throws when one is still busy after `timeoutMs`, naming the busiest
 */
export async function quiet(
  what: string,
  tiers: Tiers,
  o: { cores?: number; windowMs?: number; timeoutMs?: number } = {},
): Promise<{ waitedMs: number; busy: string }> {
  const cores = o.cores ?? QUIET_CORES;
  const windowMs = o.windowMs ?? 500;
  const started = Date.now();
  const deadline = started + (o.timeoutMs ?? 180_000);
  let calm = 0;
  let busiest = '';
  while (calm < 2) {
    const before = cpuSeconds(tiers);
    await new Promise((r) => setTimeout(r, windowMs));
    const after = cpuSeconds(tiers);
    const used = Object.entries(after).map(([t, s]) => [t, s - (before[t] ?? s)] as const);
    const [name, most] = used.reduce((a, b) => (b[1] > a[1] ? b : a), ['none', 0] as const);
    if (most / (windowMs / 1000) < cores) calm++;
    else {
      calm = 0;
      busiest = `${name} at ${((most * 1000) / windowMs).toFixed(2)} cores`;
    }
    if (calm < 2 && Date.now() > deadline) {
      throw new Error(`${what}: still busy after ${o.timeoutMs ?? 180_000} ms (${busiest})`);
    }
  }
  return { waitedMs: Date.now() - started, busy: busiest };
}
