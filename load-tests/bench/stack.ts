/**
 * Throwaway servers for a benchmark run: a redis-server (no persistence) and a PostgreSQL cluster
 * (migrated, default durability), each on a free port in a temp folder, or the ones at the given URLs.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { ensureBinaries, searchDirs } from '../../src/launcher/binaries.js';
import { startPostgres } from '../../src/launcher/postgres-server.js';
import { freePort, freePortRange } from '../../src/launcher/process.js';
import { startRedisCluster, type RunningCluster } from '../../src/launcher/redis-cluster.js';
import { benchRedis } from './redis.js';
import { progress } from './report.js';

export interface BenchStack {
  redisUrl: string;
  databaseUrl: string;
  /** pids of the servers this run started (for CPU accounting); absent for given URLs */
  redisPid?: number | undefined;
  postgresPid?: number | undefined;
  stop(): Promise<void>;
}

/** Starts what is missing (binaries looked up on the launcher's search path), then migrates. */
export async function benchStack(o: {
  redisUrl?: string | undefined;
  databaseUrl?: string | undefined;
  /** false: leave the database empty (another checkout's `seckill migrate` fills it) */
  migrate?: boolean;
}): Promise<BenchStack> {
  progress('starting redis-server and PostgreSQL');
  const pathEnv = loadConfig(process.env, { AUTH_MODE: 'dev' }).launcher.searchPath;
  const redis = await benchRedis(o.redisUrl, pathEnv);
  let databaseUrl = o.databaseUrl;
  let postgresPid: number | undefined;
  let stopPg = async () => {};
  if (!databaseUrl) {
    const bins = ensureBinaries({
      need: ['postgres'],
      autoInstall: true,
      dirs: searchDirs(pathEnv),
    });
    const dir = mkdtempSync(join(tmpdir(), 'seckill-bench-pg-'));
    // mkdtemp makes it 0700; as root PostgreSQL runs as another user and must reach it
    chmodSync(dir, 0o755);
    const pg = await startPostgres({
      port: await freePort(),
      dir: join(dir, 'cluster'),
      binDir: bins.postgres!,
      // default durability (fsync, synchronous_commit on): what a real deployment pays per commit
    });
    databaseUrl = pg.url;
    postgresPid = pg.process.pid;
    stopPg = async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  if (o.migrate !== false) {
    const db = createDb(databaseUrl);
    await migrateToLatest(db);
    await db.destroy();
  }
  return {
    redisUrl: redis.url,
    databaseUrl,
    redisPid: redis.pid,
    postgresPid,
    async stop() {
      await stopPg();
      await redis.stop();
    },
  };
}

/**
 * A throwaway local Redis Cluster (no persistence) in a temp folder, on free ports; `stop()`
 * stops its nodes and removes the folder.
 */
export async function benchCluster(o: {
  shards: number;
  replicas: number;
  /** restart a node that dies, as `seckill up` does */
  supervise?: boolean;
}): Promise<{ cluster: RunningCluster; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'seckill-bench-cluster-'));
  const cluster = await startRedisCluster({
    basePort: await freePortRange(2 * o.shards * (1 + o.replicas)),
    shards: o.shards,
    replicas: o.replicas,
    dir,
    binDir: ensureBinaries({
      need: ['redis'],
      autoInstall: true,
      dirs: searchDirs(process.env.PATH),
    }).redis!,
    persistence: 'none',
    ...(o.supervise && { supervise: {} }),
  });
  return {
    cluster,
    async stop() {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
