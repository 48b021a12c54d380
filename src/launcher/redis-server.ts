/**
 * A real redis-server on loopback, data in `dir`. AOF on and `maxmemory-policy noeviction` by
 * default: BullMQ requires noeviction, and the outbox and buyer markers must survive a restart.
 */
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import {
  assertPortFree,
  LaunchError,
  spawnService,
  stopStale,
  tail,
  type ServiceProcess,
} from './process.js';

export interface RedisServerOptions {
  port: number;
  dir: string;
  /** Directory holding redis-server. */
  binDir: string;
  /** 'aof' (default) or 'none' (throwaway test servers). */
  persistence?: 'aof' | 'none';
  /**
   * maxmemory (default 1gb): with noeviction, writes fail past it, so the metric
   * seckill_redis_memory_used_ratio is there to alert well before; without one, Redis would
   * grow until the machine runs out.
   */
  maxmemory?: string;
  /** Extra `--name value` arguments (tests enable DEBUG this way). */
  extraArgs?: string[];
  startTimeoutMs?: number;
}

export interface RunningRedis {
  url: string;
  port: number;
  process: ServiceProcess;
  stop(): Promise<void>;
}

/** Resolves when the server answers PING with PONG (not -LOADING while it replays the AOF). */
export function redisAnswers(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let buf = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'));
    });
  });
}

const DEFAULT_MAXMEMORY = '1gb';

export async function startRedisServer(opts: RedisServerOptions): Promise<RunningRedis> {
  mkdirSync(opts.dir, { recursive: true });
  const pidFile = join(opts.dir, 'redis.pid');
  await stopStale(pidFile, 'redis-server', 'SIGTERM');
  await assertPortFree(opts.port);
  const persistence = opts.persistence ?? 'aof';
  const args = [
    '--port',
    String(opts.port),
    '--bind',
    '127.0.0.1',
    '--dir',
    opts.dir,
    '--pidfile',
    pidFile,
    '--daemonize',
    'no',
    '--maxmemory',
    opts.maxmemory ?? DEFAULT_MAXMEMORY,
    '--maxmemory-policy',
    'noeviction',
    ...(persistence === 'aof'
      ? ['--appendonly', 'yes', '--appendfsync', 'everysec']
      : ['--appendonly', 'no', '--save', '']),
    ...(opts.extraArgs ?? []),
  ];
  const proc = spawnService({
    name: 'redis-server',
    command: join(opts.binDir, 'redis-server'),
    args,
    logFile: join(opts.dir, 'redis.log'),
    stopSignal: 'SIGTERM',
  });
  const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000);
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (!(await redisAnswers(opts.port))) {
    if (exited || Date.now() > deadline) {
      await proc.stop();
      throw new LaunchError(
        `redis-server on port ${opts.port} did not come up${exited ? ' (it exited)' : ''}; ` +
          `last lines of ${proc.logFile}:\n${tail(proc.logFile)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${opts.port}`,
    port: opts.port,
    process: proc,
    stop: () => proc.stop(),
  };
}
