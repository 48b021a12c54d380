/**
 * A command that needs Redis or PostgreSQL checks first that they answer, and otherwise ends
 * with one line naming what it tried and what to do, instead of a client library's retry error
 * and its stack frames.
 */
import type { Core } from '../composition/core.js';
import { redactText, redactUrl, type Config } from '../config/index.js';
import { pingDb } from '../db/index.js';
import { messageOf } from '../errors.js';
import { STACK_FILE } from '../launcher/stack-file.js';
import { pingRedis } from '../redis/connection.js';
import { ExitError } from './output.js';

export type Store = 'redis' | 'postgres';

/** Where the command looked for `store`, and what a person can do about it not answering. */
export function storeAdvice(config: Config, store: Store): { where: string; todo: string } {
  const { redis, postgres, launcher } = config;
  if (store === 'postgres') {
    return launcher.useExternalPostgres
      ? {
          where: `PostgreSQL at ${redactUrl(postgres.url)}`,
          todo: 'is it running? check DATABASE_URL',
        }
      : {
          where: `PostgreSQL at ${redactUrl(postgres.url)}`,
          todo: 'is "npm start" running? set DATABASE_URL or LOCAL_PG_PORT',
        };
  }
  const nodes = redis.cluster?.map((n) => `${n.host}:${n.port}`).join(',');
  if (!launcher.useExternalRedis) {
    return {
      where: nodes ? `Redis Cluster at ${nodes}` : `Redis at ${redactUrl(redis.url)}`,
      todo: `is "npm start" running? set ${nodes ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL'} or LOCAL_REDIS_PORT`,
    };
  }
  return nodes
    ? { where: `Redis Cluster at ${nodes}`, todo: 'is it running? check REDIS_CLUSTER_NODES' }
    : { where: `Redis at ${redactUrl(redis.url)}`, todo: 'is it running? check REDIS_URL' };
}

/** Thrown when a store does not answer: exit 1 with one line. */
export class StoreDownError extends ExitError {
  constructor(config: Config, store: Store, why: string) {
    const { where, todo } = storeAdvice(config, store);
    // pingRedis says "unreachable (<why>)": the line says "no ..." already
    const reason = redactText(why)
      .split('\n')[0]!
      .replace(/^unreachable \((.*)\)$/, '$1');
    super(`no ${where} (${reason}): ${todo}`, 1);
  }
}

const within = <T>(ms: number, what: Promise<T>): Promise<T> =>
  Promise.race([
    what,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref(),
    ),
  ]);

/** Resolves when every store in `stores` answers; throws {@link StoreDownError} naming the first that does not. */
export async function assertStoresAnswer(core: Core, stores: Store[]): Promise<void> {
  const { config } = core;
  const waitMs = Math.max(3_000, config.postgres.connectTimeoutMs + 1_000);
  for (const store of stores) {
    const check =
      store === 'redis'
        ? pingRedis(core.redis).then(() => undefined)
        : pingDb(core.db).then(() => undefined);
    try {
      await within(waitMs, check);
    } catch (err) {
      throw new StoreDownError(config, store, messageOf(err));
    }
    if (store === 'redis' && !config.redis.cluster) await assertNotCluster(core);
  }
}

/**
 * The local Redis (LOCAL_REDIS_PORT, no LOCAL_REDIS_SHARDS) is a node of a Redis Cluster: the
 * command connects to it as one (`node` as its seed: the client finds the other masters).
 */
export class LocalClusterNode extends Error {
  constructor(readonly node: string) {
    super(`the local Redis at ${node} is a node of a Redis Cluster`);
  }
}

/**
 * A standalone client on a Redis Cluster node answers MOVED (or EXECABORT) to most commands:
 * the local one is then reached as a cluster ({@link LocalClusterNode}); a REDIS_URL given is
 * what was asked for, so the command says so, and what to set, before its first key.
 */
async function assertNotCluster(core: Core): Promise<void> {
  const info = await within(3_000, core.redis.info('cluster')).catch(() => '');
  if (!/^cluster_enabled:1/m.test(info)) return;
  const { redis, launcher } = core.config;
  if (!launcher.useExternalRedis) throw new LocalClusterNode(new URL(redis.url).host);
  const at = new URL(redis.url).host;
  throw new ExitError(
    `Redis at ${redactUrl(redis.url)} is a node of a Redis Cluster: set ` +
      `REDIS_CLUSTER_NODES=${at} instead of REDIS_URL ` +
      `(a running "npm start" tells the CLI itself through DATA_DIR/${STACK_FILE}: ` +
      'is DATA_DIR the same?)',
    1,
  );
}
