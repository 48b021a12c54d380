/**
 * A local seckill stack as Kubernetes runs it, on free loopback ports in a temp folder: one
 * redis-server and PostgreSQL (the launcher's own code), and 2 `seckill serve` and 2
 * `seckill worker` processes (the CLI from source), each its own Prometheus target.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { ensureBinaries, searchDirs } from '../../src/launcher/binaries.js';
import { startPostgres, type RunningPostgres } from '../../src/launcher/postgres-server.js';
import { freePort } from '../../src/launcher/process.js';
import { startRedisServer, type RunningRedis } from '../../src/launcher/redis-server.js';
import { waitFor } from './wait.js';

/** ROOM_MAX_PLACES of the stack: the healthy room's 12 shoppers fill a line exactly */
export const OBS_ROOM_MAX_PLACES = 12;

const ROOT = join(import.meta.dirname, '..', '..');

export const ADMIN_TOKEN = 'observability-admin-token-0123';

export interface StackProcess {
  role: 'api' | 'worker';
  /** host:port of its /metrics (the Prometheus target) */
  target: string;
  url: string;
  child: ChildProcess;
}

export interface ObservedStack {
  redis: RunningRedis;
  postgres: RunningPostgres;
  databaseUrl: string;
  /** what every process was started with (KEY_PREFIX, QUEUE_PREFIX, ...) */
  env: Record<string, string>;
  apis: StackProcess[];
  workers: StackProcess[];
  /** SIGSTOP: Redis stops answering, connections stay open (a stalled or paused server). */
  freezeRedis(): void;
  thawRedis(): void;
  /** Kills one process (SIGKILL: a crash) and waits for it to be gone. */
  kill(p: StackProcess): Promise<void>;
  stop(): Promise<void>;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function startProcess(
  role: 'api' | 'worker',
  env: Record<string, string>,
  port: number,
  dir: string,
  n: number,
): StackProcess {
  const log = openSync(join(dir, `${role}-${n}.log`), 'a');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), role === 'api' ? 'serve' : 'worker'],
    {
      cwd: ROOT,
      env: {
        HOME: process.env.HOME ?? '/root',
        PATH: process.env.PATH ?? '',
        ...env,
        ...(role === 'api' ? { PORT: String(port) } : { WORKER_PORT: String(port) }),
      },
      stdio: ['ignore', log, log],
    },
  );
  const target = `127.0.0.1:${port}`;
  return { role, target, url: `http://${target}`, child };
}

export async function startObservedStack(dir: string): Promise<ObservedStack> {
  const pathEnv = loadConfig(process.env, { AUTH_MODE: 'dev' }).launcher.searchPath;
  const bins = ensureBinaries({
    need: ['redis', 'postgres'],
    autoInstall: process.env.AUTO_INSTALL !== 'false',
    dirs: searchDirs(pathEnv),
  });
  mkdirSync(join(dir, 'redis'), { recursive: true });
  const redis = await startRedisServer({
    port: await freePort(),
    dir: join(dir, 'redis'),
    binDir: bins.redis!,
    persistence: 'none',
  });
  let postgres: RunningPostgres | undefined;
  const children: StackProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await gone;
        clearTimeout(timer);
      }),
    );
    // a frozen Redis (SIGSTOP) must not hold the shutdown
    signal(redis.process.pid, 'SIGCONT');
    await postgres?.stop();
    await redis.stop();
  };
  try {
    postgres = await startPostgres({
      port: await freePort(),
      dir: join(dir, 'pg'),
      binDir: bins.postgres!,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    });
    const db = createDb(postgres.url, { max: 1 });
    await migrateToLatest(db);
    await db.destroy();
    const env: Record<string, string> = {
      REDIS_URL: redis.url,
      DATABASE_URL: postgres.url,
      HOST: '127.0.0.1',
      AUTH_MODE: 'dev',
      ...NO_RATE_LIMITS,
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      KEY_PREFIX: 'obs',
      QUEUE_PREFIX: '{obsq}',
      // each API process alone serves the API (as one pod does); no worker probes in `serve`
      API_PROCESSES: '1',
      SHUTDOWN_TIMEOUT_MS: '5000',
      // a lease shorter than a command's timeout: a purchase that holds a lock when Redis
      // freezes loses it for certain (its lease runs out while its command still waits), so the
      // lock-lost alert's condition is produced, not hoped for (with both at 2 s it was a race)
      LOCK_LEASE_MS: '1000',
      // the waiting rooms' sale tokens (a room's product cannot be seeded without)
      SALE_TOKEN_SECRET: 'observability-sale-token-secret-0123456789',
      REDIS_COMMAND_TIMEOUT_MS: '3000',
      // short enough that a scenario fills a line (room-scenarios.ts: roomFull)
      ROOM_MAX_PLACES: String(OBS_ROOM_MAX_PLACES),
    };
    for (let i = 0; i < 2; i++) {
      children.push(startProcess('api', env, await freePort(), dir, i));
      children.push(startProcess('worker', env, await freePort(), dir, i));
    }
    for (const p of children) {
      let exited = false;
      p.child.once('exit', () => (exited = true));
      await waitFor(
        `${p.role} ${p.url}/readyz (log in ${dir})`,
        async () => {
          if (exited) throw new Error(`${p.role} exited (log in ${dir})`);
          return (await fetch(`${p.url}/readyz`)).ok;
        },
        90_000,
      );
    }
    return {
      redis,
      postgres,
      databaseUrl: postgres.url,
      env,
      apis: children.filter((c) => c.role === 'api'),
      workers: children.filter((c) => c.role === 'worker'),
      freezeRedis: () => signal(redis.process.pid, 'SIGSTOP'),
      thawRedis: () => signal(redis.process.pid, 'SIGCONT'),
      async kill(p) {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return;
        const gone = new Promise((r) => p.child.once('exit', r));
        p.child.kill('SIGKILL');
        await gone;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
