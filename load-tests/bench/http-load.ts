/**
 * One load run against a POST route, and the figures the HTTP benchmark keeps of it. The driver
 * is wrk (C, a few microseconds of CPU per request) when it is installed, else autocannon (in
 * this process, about ten times the CPU per request): on a machine whose cores the server shares
 * with the load generator, a heavy generator takes CPU from what it measures.
 */
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { ROOT } from './processes.js';

export interface Load {
  seconds: number;
  requests: number;
  status: Record<string, number>;
  errors: number;
  /** ms; wrk gives percentiles only, so this holds those three (p50, p95, p99) */
  latencies: number[];
  /** ms, when the driver reports percentiles itself */
  percentiles?: { p50: number; p95: number; p99: number };
  /** Redis commands run while it lasted (INFO commandstats), background work included */
  redisCommands: number;
  /** CPU seconds each tier (API, worker, Redis, PostgreSQL, load generator) spent meanwhile */
  cpu: Record<string, number>;
}

export type Driver = 'wrk' | 'autocannon';

/** wrk when it is on PATH, else autocannon. */
export function pickDriver(): Driver {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return 'wrk';
  } catch (err) {
    // wrk --version exits 1 after printing its version
    return (err as { status?: number }).status === 1 ? 'wrk' : 'autocannon';
  }
}

export interface LoadOptions {
  duration: number;
  connections: number;
  /** wrk.lua's optional arguments after `path productId tag` (wrk only): shape, stopAfter */
  scriptArgs?: string[];
  /** ends the run early (wrk gets SIGINT, stops, and still prints its figures) */
  signal?: AbortSignal;
  /** an Idempotency-Key per purchase (the shopper's id: one per request) */
  keyed?: boolean;
}

export function load(
  driver: Driver,
  base: string,
  path: string,
  productId: string,
  tag: string,
  opts: LoadOptions,
): Promise<Omit<Load, 'redisCommands' | 'cpu'>> {
  if (opts.scriptArgs && driver !== 'wrk') throw new Error('wrk.lua arguments need wrk on PATH');
  return driver === 'wrk'
    ? wrkLoad(base, path, productId, tag, opts)
    : autocannonLoad(base, path, productId, tag, opts);
}

interface WrkFigures {
  requests: number;
  durationUs: number;
  errors: number;
  p50Us: number;
  p95Us: number;
  p99Us: number;
  statuses: Record<string, number>;
}

async function wrkLoad(
  base: string,
  path: string,
  productId: string,
  tag: string,
  opts: LoadOptions,
): Promise<Omit<Load, 'redisCommands' | 'cpu'>> {
  const args = [
    '-t1',
    `-c${opts.connections}`,
    `-d${opts.duration}s`,
    // a purchase may queue for a lock up to LOCK_QUEUE_MS (2 s) and then LOCK_WAIT_MS: an answer
    // that late is a slow answer, not a lost one
    '--timeout',
    '10s',
    '-s',
    join(ROOT, 'load-tests', 'bench', 'wrk.lua'),
    base,
    '--',
    path,
    productId,
    tag,
    ...(opts.scriptArgs ?? (opts.keyed ? ['keyed'] : [])),
  ];
  const stdout = await new Promise<string>((resolve, reject) => {
    const wrk = execFile('wrk', args, (err, out, errOut) =>
      err ? reject(new Error(`wrk failed: ${errOut || err.message}`)) : resolve(out),
    );
    // not execFile's own signal option: that drops the output wrk prints as it stops
    opts.signal?.addEventListener('abort', () => wrk.kill('SIGINT'), { once: true });
  });
  const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
  if (!line) throw new Error(`wrk printed no figures:\n${stdout}`);
  const f = JSON.parse(line) as WrkFigures;
  const percentiles = { p50: f.p50Us / 1000, p95: f.p95Us / 1000, p99: f.p99Us / 1000 };
  return {
    seconds: f.durationUs / 1e6,
    requests: f.requests,
    status: f.statuses,
    errors: f.errors,
    latencies: [],
    percentiles,
  };
}

/** autocannon against POST `path`, a distinct X-User-Id (and Idempotency-Key) per request. */
async function autocannonLoad(
  base: string,
  path: string,
  productId: string,
  tag: string,
  opts: { duration: number; connections: number; keyed?: boolean },
): Promise<Omit<Load, 'redisCommands' | 'cpu'>> {
  let n = 0;
  const headers = (user: string) =>
    opts.keyed ? { 'x-user-id': user, 'idempotency-key': user } : { 'x-user-id': user };
  const latencies: number[] = [];
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: base,
        connections: opts.connections,
        duration: opts.duration,
        requests: [
          {
            method: 'POST',
            path,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ productId }),
            setupRequest: (req) => ({
              ...req,
              headers: { ...req.headers, ...headers(`${tag}-${n++}`) },
            }),
          },
        ],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });
  const status: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) {
    status[code] = (s as { count: number }).count;
  }
  return {
    seconds: r.duration,
    requests: r.requests.total,
    status,
    errors: r.errors + r.timeouts,
    latencies,
  };
}

/** Adds `more` to `into` (rounds of one scenario). */
export function addLoad(into: Load, more: Load): void {
  into.seconds += more.seconds;
  into.requests += more.requests;
  into.errors += more.errors;
  into.redisCommands += more.redisCommands;
  for (const [t, s] of Object.entries(more.cpu)) into.cpu[t] = (into.cpu[t] ?? 0) + s;
  for (const [c, k] of Object.entries(more.status)) into.status[c] = (into.status[c] ?? 0) + k;
  for (const ms of more.latencies) into.latencies.push(ms);
  // wrk's percentiles of several rounds: the worst round's (a conservative summary)
  if (more.percentiles) {
    const p = into.percentiles ?? more.percentiles;
    into.percentiles = {
      p50: Math.max(p.p50, more.percentiles.p50),
      p95: Math.max(p.p95, more.percentiles.p95),
      p99: Math.max(p.p99, more.percentiles.p99),
    };
  }
}
