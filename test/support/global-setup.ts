/**
 * Starts one throwaway redis-server and PostgreSQL for the whole run (unless TEST_REDIS_URL /
 * TEST_DATABASE_URL point at servers to use), migrates a template database that each test file
 * clones, and stops everything afterwards. The `cluster` project runs its files on a local
 * 3-master Redis Cluster instead (started by the launcher's own code, or TEST_REDIS_CLUSTER_NODES).
 */
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { startRedisCluster } from '../../src/launcher/redis-cluster.js';
import { freePortRange } from './ports.js';
import { binDirs, startTestPostgres, startTestRedis, tempDir } from './servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** "host:port,..." of the Redis Cluster this project runs on; "" on a standalone Redis */
    redisClusterNodes: string;
    /** Server URL without a database; files create their own database from the template. */
    postgresServerUrl: string;
    templateDatabase: string;
  }
}

export const TEMPLATE_DB = 'seckill_template';

export default async function setup(project: TestProject) {
  const dir = tempDir('run');
  const stops: Array<() => Promise<void>> = [];
  // every server started is stopped, whichever stop fails, and also when the setup itself fails
  const stopAll = async () => {
    const results = await Promise.allSettled(stops.reverse().map((stop) => stop()));
    dir.remove();
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    if (failed.length > 0) throw new AggregateError(failed, 'stopping the test servers failed');
  };
  try {
    await start(project, dir, stops);
  } catch (err) {
    await stopAll().catch(() => {});
    throw err;
  }
  return stopAll;
}

async function start(
  project: TestProject,
  dir: ReturnType<typeof tempDir>,
  stops: Array<() => Promise<void>>,
): Promise<void> {
  // one template per project: projects set up side by side (on a TEST_DATABASE_URL server too)
  const template = `${TEMPLATE_DB}_${project.name.replace(/\W/g, '_')}`;
  let redisUrl = process.env.TEST_REDIS_URL;
  let clusterNodes = '';
  if (project.name === 'cluster') {
    clusterNodes = process.env.TEST_REDIS_CLUSTER_NODES ?? '';
    if (!clusterNodes) {
      const cluster = await startRedisCluster({
        basePort: await freePortRange(6),
        shards: 3,
        replicas: 0,
        dir: `${dir.path}/redis-cluster`,
        binDir: binDirs().redis,
        persistence: 'none',
      });
      stops.push(() => cluster.stop());
      clusterNodes = cluster.masters.map((m) => `${m.host}:${m.port}`).join(',');
    }
    redisUrl = `redis://${clusterNodes.split(',')[0]}`;
  }
  let serverUrl = process.env.TEST_DATABASE_URL;
  if (!redisUrl) {
    const redis = await startTestRedis({ dir: `${dir.path}/redis` });
    stops.push(() => redis.stop());
    redisUrl = redis.url;
  }
  if (!serverUrl) {
    const postgres = await startTestPostgres(`${dir.path}/pg`);
    stops.push(() => postgres.stop());
    serverUrl = postgres.url.replace(/\/[^/]*$/, '');
  }

  const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await admin.connect();
  await admin.query(`drop database if exists ${template}`);
  await admin.query(`create database ${template}`);
  await admin.end();
  const db = createDb(`${serverUrl}/${template}`, { max: 1 });
  await migrateToLatest(db);
  await db.destroy();

  project.provide('redisUrl', redisUrl);
  project.provide('redisClusterNodes', clusterNodes);
  project.provide('postgresServerUrl', serverUrl);
  project.provide('templateDatabase', template);
}
