/**
 * CPU time of the processes of a benchmark run, by tier, from /proc (Linux): what each request
 * costs the API, the worker, Redis, PostgreSQL and the load generator. Elsewhere it reports
 * nothing rather than guess.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Kernel clock ticks per second (getconf CLK_TCK; 100 on every Linux this runs on). */
const TICKS_PER_S = 100;

interface Stat {
  pid: number;
  ppid: number;
  ticks: number;
}

function stat(pid: number | string): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name may hold spaces: fields start after the last ')'
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // utime + stime, and cutime + cstime: children that exited (a wrk run, a PostgreSQL backend)
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    return { pid: Number(pid), ppid: Number(f[1]), ticks };
  } catch {
    return undefined;
  }
}

/** Every process now. */
function processes(): Stat[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map((d) => stat(d))
      .filter((s): s is Stat => s !== undefined);
  } catch {
    return [];
  }
}

/**
 * A process and its children (PostgreSQL forks a backend per connection; wrk runs as a child
 * of the load generator), not descending into `others` (the roots of other tiers).
 */
function withChildren(all: Stat[], root: number, others: Set<number>): Stat[] {
  const out = all.filter((s) => s.pid === root);
  for (let i = 0; i < out.length; i++) {
    out.push(...all.filter((s) => s.ppid === out[i]!.pid && !others.has(s.pid)));
  }
  return out;
}

export type Tiers = Record<string, number | undefined>;

/** CPU seconds so far of each tier (a tier is a pid, counted with its own children). */
export function cpuSeconds(tiers: Tiers): Record<string, number> {
  const all = processes();
  const roots = new Set(Object.values(tiers).filter((p): p is number => p !== undefined));
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(tiers)) {
    if (pid === undefined) continue;
    const stats = withChildren(all, pid, roots);
    if (stats.length) out[name] = stats.reduce((a, s) => a + s.ticks, 0) / TICKS_PER_S;
  }
  return out;
}

/** Microseconds of CPU per request of each tier between two readings. */
export function perRequestUs(
  before: Record<string, number>,
  after: Record<string, number>,
  requests: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, s] of Object.entries(after)) {
    if (before[name] === undefined) continue;
    out[name] = Math.round(((s - before[name]) * 1e6) / Math.max(1, requests));
  }
  return out;
}
