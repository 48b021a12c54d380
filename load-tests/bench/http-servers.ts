/**
 * The processes `npm run bench` serves its scenarios from, besides the main API and worker: a
 * delaying proxy in front of Redis per round-trip delay, an API process behind each (today's
 * path at that delay), and the held-lock baseline's server (held-lock-server.ts), direct and
 * behind each proxy. Each is started only when a chosen scenario needs it.
 */
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../../src/launcher/process.js';
import type { Scenario } from './http-scenarios.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';

export interface Served {
  base: string;
  proc: ChildProcess;
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => resolve(s.destroy() !== undefined));
    s.once('error', () => resolve(false));
  });

/** Redis behind a TCP proxy that delays each direction (the netem stand-in). */
export async function delayProxy(redisUrl: string, delayMs: number) {
  const port = await freePort();
  const target = new URL(redisUrl);
  const proc = child(
    [
      '--import',
      'tsx',
      join(ROOT, 'load-tests', 'bench', 'delay-proxy.ts'),
      String(port),
      `${target.hostname}:${target.port}`,
      String(delayMs),
    ],
    process.env,
    `delay proxy (+${delayMs} ms)`,
  );
  await until('the delay proxy', () => portOpen(port), 10_000);
  return { url: `redis://127.0.0.1:${port}`, proc };
}

export async function heldServer(env: NodeJS.ProcessEnv, redisUrl: string, label: string) {
  const port = await freePort();
  const proc = child(
    ['--import', 'tsx', join(ROOT, 'load-tests', 'bench', 'held-lock-server.ts')],
    { ...env, REDIS_URL: redisUrl, PORT: String(port) },
    label,
  );
  const base = `http://127.0.0.1:${port}`;
  await until(label, async () => (await fetch(`${base}/healthz`)).ok, 30_000);
  return { base, proc };
}

export async function apiServer(env: NodeJS.ProcessEnv, redisUrl: string, label: string) {
  const port = await freePort();
  const proc = child(cli('serve'), { ...env, REDIS_URL: redisUrl, PORT: String(port) }, label);
  const base = `http://127.0.0.1:${port}`;
  await until(label, async () => (await fetch(`${base}/readyz`)).ok, 60_000);
  return { base, proc };
}

export interface DelayedServers {
  /** the held-lock server at this delay (0: direct) */
  held(delayMs: number): Served;
  /** the API process behind the proxy of this delay (> 0) */
  api(delayMs: number): Served;
  /** the proxy of this delay, if any (its CPU is not a tier's) */
  proxy(delayMs: number): ChildProcess | undefined;
  /** every process started here */
  procs(): ChildProcess[];
  stop(): Promise<void>;
}

/**
 * Starts what the chosen scenarios need. `env` is the main API's environment: the held-lock
 * servers share its key prefix, so the restocker names the product's own segment locks.
 */
export async function delayedServers(
  chosen: Scenario[],
  redisUrl: string,
  env: NodeJS.ProcessEnv,
): Promise<DelayedServers> {
  const delayOf = (s: Scenario) => s.delayMs ?? 0;
  const heldAt = new Set(chosen.filter((s) => s.kind === 'held').map(delayOf));
  if (chosen.some((s) => s.restocks)) heldAt.add(0);
  const apiAt = new Set(chosen.filter((s) => s.kind === 'sale' && s.delayMs).map(delayOf));
  const proxies = new Map<number, { url: string; proc: ChildProcess }>();
  const held = new Map<number, Served>();
  const apis = new Map<number, Served>();
  const all = () => [...held.values(), ...apis.values(), ...proxies.values()].map((x) => x.proc);
  try {
    for (const d of new Set([...heldAt, ...apiAt])) {
      if (d > 0) proxies.set(d, await delayProxy(redisUrl, d));
      const url = proxies.get(d)?.url ?? redisUrl;
      const label = d ? ` (+${d} ms)` : '';
      if (heldAt.has(d)) held.set(d, await heldServer(env, url, `held-lock server${label}`));
      if (apiAt.has(d)) apis.set(d, await apiServer(env, url, `API${label}`));
    }
  } catch (err) {
    await stopAll(all());
    throw err;
  }
  const get = <T>(m: Map<number, T>, d: number, what: string) => {
    const v = m.get(d);
    if (!v) throw new Error(`no ${what} at +${d} ms`);
    return v;
  };
  return {
    held: (d) => get(held, d, 'held-lock server'),
    api: (d) => get(apis, d, 'API'),
    proxy: (d) => proxies.get(d)?.proc,
    procs: all,
    stop: () => stopAll(all()),
  };
}
