/**
 * Starts the servers `seckill up` needs that the environment does not provide (REDIS_URL /
 * DATABASE_URL unset): binaries found or installed, redis-server and PostgreSQL on loopback with
 * data under DATA_DIR. Each stop is registered with the lifecycle, so they stop last, in reverse.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import webPush from 'web-push';
import { redactUrl, type Config } from '../config/index.js';
import { messageOf } from '../errors.js';
import type { Lifecycle } from '../lifecycle.js';
import { ensureBinaries, searchDirs, type ServiceName } from './binaries.js';
import { startPostgres } from './postgres-server.js';
import { LaunchError, PortBusyError, type ServiceProcess } from './process.js';
import { startRedisCluster, type ClusterNode } from './redis-cluster.js';
import { CHALLENGE_POW_SECRET_FILE, SALE_TOKEN_SECRET_FILE } from './stack-file.js';
import { startRedisServer } from './redis-server.js';

/** How long `up` waits for PostgreSQL's own clean stop before killing it. */
const PG_STOP_MS = 10_000;

export interface LocalStackOptions {
  config: Config;
  lifecycle: Lifecycle;
  progress: (line: string) => void;
  /** Called when a server we started exits without being asked to. */
  onCrash: (name: string, code: number | string, logFile: string) => void;
  /**
   * Called when a node of the local Redis Cluster exits without being asked to; the launcher
   * restarts it after `restartInMs`, as a supervisor would.
   */
  onNodeExit?: (name: string, code: number | string, logFile: string, restartInMs: number) => void;
  /** Called when such a node is back (or could not be started again: `err`). */
  onNodeRestart?: (name: string, err?: unknown) => void;
}

/** A busy port, said with the variable that moves it (what the person can change). */
function namingPort(variable: string, value: number) {
  return (err: unknown): never => {
    if (!(err instanceof PortBusyError)) throw err;
    const which = err.port === value ? '' : ` (it uses ${err.port} too)`;
    throw new LaunchError(
      `${variable} ${value}${which}: port ${err.port} is already in use: stop what listens ` +
        `there, or set ${variable} to a free port`,
    );
  };
}

function watch(service: ServiceProcess, onCrash: LocalStackOptions['onCrash']): void {
  void service.exited.then((code) => {
    if (!service.stopping) onCrash(service.name, code, service.logFile);
  });
}

const nodeName = (node: ClusterNode) => `redis-server ${node.port} (formed as ${node.role})`;

export async function startLocalServices(opts: LocalStackOptions): Promise<void> {
  const { launcher } = opts.config;
  const need: ServiceName[] = [];
  if (!launcher.useExternalRedis) need.push('redis');
  if (!launcher.useExternalPostgres) need.push('postgres');
  if (need.length === 0) {
    opts.progress('REDIS_URL and DATABASE_URL are set: using those servers, starting none');
    return;
  }
  const bins = ensureBinaries({
    need,
    autoInstall: launcher.autoInstall,
    dirs: searchDirs(launcher.searchPath),
    progress: opts.progress,
  });
  const dataDir = resolve(launcher.dataDir);
  mkdirSync(dataDir, { recursive: true });

  if (bins.redis && launcher.redisShards >= 3) {
    const dir = join(dataDir, 'redis-cluster');
    const cluster = await startRedisCluster({
      basePort: launcher.redisPort,
      shards: launcher.redisShards,
      replicas: launcher.redisReplicas,
      extraArgs: ['--maxmemory', launcher.redisMaxmemory],
      dir,
      binDir: bins.redis,
      progress: opts.progress,
      // One node going is what a cluster is for: its replica takes over, or its segments answer
      // 503 while the others sell. Do not stop the stack: bring the node back, as a supervisor
      // would (it rejoins as a replica of the one that took over).
      supervise: {
        onExit: (node, code, delay) =>
          opts.onNodeExit?.(nodeName(node), code, node.process.logFile, delay),
        onRestart: (node) => opts.onNodeRestart?.(nodeName(node)),
        onRestartFailed: (node, err) => opts.onNodeRestart?.(nodeName(node), err),
      },
    }).catch((err: unknown) => {
      namingPort('LOCAL_REDIS_PORT', launcher.redisPort)(err);
      throw new LaunchError(
        `the local Redis Cluster did not come up: ${messageOf(err)} (logs under ${dir}; ` +
          'removing that folder starts a new, empty cluster)',
      );
    });
    opts.lifecycle.add(
      'redis cluster',
      () => cluster.stop(),
      () => Promise.all(cluster.nodes.map((n) => n.process.kill())),
    );
    const ports = cluster.nodes.map((n) => n.port);
    opts.progress(
      `Redis Cluster up: ${launcher.redisShards} masters` +
        (launcher.redisReplicas ? `, ${launcher.redisReplicas} replica(s) each` : '') +
        ` on ports ${ports[0]}-${ports.at(-1)} (AOF, noeviction, maxmemory ${launcher.redisMaxmemory} each; data and logs under ${dir})`,
    );
  } else if (bins.redis) {
    const redis = await startRedisServer({
      port: launcher.redisPort,
      dir: join(dataDir, 'redis'),
      binDir: bins.redis,
      maxmemory: launcher.redisMaxmemory,
    }).catch(namingPort('LOCAL_REDIS_PORT', launcher.redisPort));
    opts.lifecycle.add(
      'redis-server',
      () => redis.stop(),
      () => redis.process.kill(),
    );
    watch(redis.process, opts.onCrash);
    opts.progress(
      `redis-server up at ${redactUrl(redis.url)} (AOF, noeviction, maxmemory ${launcher.redisMaxmemory}; log ${redis.process.logFile})`,
    );
  }
  if (bins.postgres) {
    const pg = await startPostgres({
      port: launcher.pgPort,
      dir: join(dataDir, 'postgres'),
      binDir: bins.postgres,
      progress: opts.progress,
    }).catch(namingPort('LOCAL_PG_PORT', launcher.pgPort));
    opts.lifecycle.add(
      'postgres',
      () => pg.stop(),
      () => pg.process.kill(),
      // its fast shutdown writes a checkpoint: seconds on a loaded machine, worth waiting for
      PG_STOP_MS,
    );
    watch(pg.process, opts.onCrash);
    opts.progress(
      `PostgreSQL up at ${redactUrl(pg.url)} (data ${pg.dir}; log ${pg.process.logFile})`,
    );
  }
}

/**
 * The admin token `seckill up` uses when ADMIN_TOKEN is unset: generated once, kept in the data
 * folder (mode 600) so it survives restarts.
 */
export function localAdminToken(dataDir: string): string {
  return localSecret(dataDir, 'admin-token', 24);
}

/** `up`'s payment webhook secret: a demo's payment-window sales can be settled by a signed webhook. */
export function localWebhookSecret(dataDir: string): string {
  return localSecret(dataDir, 'payment-webhook-secret', 32);
}

/** `up`'s sale-token secret: a waiting room's admissions (and requireSaleToken sales) work as is. */
export function localSaleTokenSecret(dataDir: string): string {
  return localSecret(dataDir, SALE_TOKEN_SECRET_FILE, 32);
}

/** `up`'s proof-of-work key: a product seeded with `challenge: { kind: 'pow' }` works as is. */
export function localChallengePowSecret(dataDir: string): string {
  return localSecret(dataDir, CHALLENGE_POW_SECRET_FILE, 32);
}

/**
 * `up`'s Web Push keys (VAPID): a pair made once and kept in DATA_DIR/vapid-keys.json (0600), so a
 * subscription a page made keeps working after a restart (a push service refuses another key).
 */
export function localVapidKeys(dataDir: string): { publicKey: string; privateKey: string } {
  const file = join(resolve(dataDir), 'vapid-keys.json');
  if (existsSync(file)) {
    return JSON.parse(readFileSync(file, 'utf8')) as { publicKey: string; privateKey: string };
  }
  mkdirSync(resolve(dataDir), { recursive: true });
  const keys = webPush.generateVAPIDKeys();
  writeFileSync(file, `${JSON.stringify(keys)}\n`, { mode: 0o600 });
  return keys;
}

/** A secret kept in DATA_DIR/<name> (0600), made once: restarts and other shells read the same one. */
function localSecret(dataDir: string, name: string, bytes: number): string {
  const file = join(resolve(dataDir), name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(resolve(dataDir), { recursive: true });
  const secret = randomBytes(bytes).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
