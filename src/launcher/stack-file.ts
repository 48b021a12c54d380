/**
 * Where a running `seckill up` keeps its stores, for the CLI in a second terminal: `up` writes
 * DATA_DIR/stack.json (its pid and the variables that say where Redis and PostgreSQL are: a
 * local cluster's shape and ports, or the URLs it was given) and removes it on exit, as it keeps
 * the admin token there. A one-shot command (`reconcile`, `seed`, `migrate`) takes from it each
 * group of variables its own environment leaves unset, so `LOCAL_REDIS_SHARDS=3 npm start` in one
 * terminal and `npm run seckill -- reconcile demo` in another reach the same cluster.
 */
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { isAlive } from './process.js';

export const STACK_FILE = 'stack.json';
/** Where `up` keeps its sale-token secret (local-stack.ts writes it). */
export const SALE_TOKEN_SECRET_FILE = 'sale-token-secret';
export const CHALLENGE_POW_SECRET_FILE = 'challenge-pow-secret';

/**
 * Variables taken together: a command that sets any one of a group keeps its own group whole
 * (a LOCAL_REDIS_PORT of its own with the file's shard count would name a cluster nobody runs).
 */
const GROUPS = [
  [
    'REDIS_URL',
    'REDIS_CLUSTER_NODES',
    'LOCAL_REDIS_PORT',
    'LOCAL_REDIS_SHARDS',
    'LOCAL_REDIS_REPLICAS',
  ],
  ['DATABASE_URL', 'LOCAL_PG_PORT'],
  ['KEY_PREFIX'],
  ['QUEUE_PREFIX'],
] as const;

interface StackRecord {
  pid: number;
  env: Record<string, string>;
}

type Env = Record<string, string | undefined>;

/** The variables that place `config`'s stores, as `up` resolved them. */
function placeOf(config: Config, env: Env): Record<string, string> {
  const { launcher, redis } = config;
  const given = (name: string) => (env[name] ? { [name]: env[name] } : {});
  return {
    ...(launcher.useExternalRedis
      ? { ...given('REDIS_URL'), ...given('REDIS_CLUSTER_NODES') }
      : {
          LOCAL_REDIS_PORT: String(launcher.redisPort),
          LOCAL_REDIS_SHARDS: String(launcher.redisShards),
          LOCAL_REDIS_REPLICAS: String(launcher.redisReplicas),
        }),
    ...(launcher.useExternalPostgres
      ? given('DATABASE_URL')
      : { LOCAL_PG_PORT: String(launcher.pgPort) }),
    KEY_PREFIX: redis.keyPrefix,
    QUEUE_PREFIX: redis.queuePrefix,
  };
}

/**
 * Writes DATA_DIR/stack.json for this process (0600: a given URL may hold a password).
 * @param env - the environment `up` read its config from (the URLs it was given are kept)
 * @returns its removal (only while the file is still this process's)
 */
export function writeStackFile(config: Config, env: Env): () => void {
  const file = join(resolve(config.launcher.dataDir), STACK_FILE);
  const record: StackRecord = { pid: process.pid, env: placeOf(config, env) };
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  return () => {
    try {
      if ((JSON.parse(readFileSync(file, 'utf8')) as StackRecord).pid === process.pid) {
        unlinkSync(file);
      }
    } catch {
      // already gone
    }
  };
}

/**
 * What a running `up` on `dataDir` says about where its stores are, for each group of variables
 * `env` leaves unset (empty strings count as unset, as in loadConfig).
 * @returns defaults for loadConfig; {} without a file, or when the `up` that wrote it is gone
 */
export function runningStackDefaults(dataDir: string, env: Env): Record<string, string> {
  const file = join(resolve(dataDir), STACK_FILE);
  if (!existsSync(file)) return {};
  let record: StackRecord;
  try {
    record = JSON.parse(readFileSync(file, 'utf8')) as StackRecord;
  } catch {
    return {}; // being written, or not ours: the environment's defaults
  }
  if (!Number.isInteger(record.pid) || !isAlive(record.pid)) return {};
  const unset = GROUPS.filter((group) => group.every((name) => !env[name]));
  return {
    ...Object.fromEntries(
      unset.flat().flatMap((name) => (record.env[name] ? [[name, record.env[name]]] : [])),
    ),
    ...keptSecrets(dataDir, env),
  };
}

/**
 * The secrets `up` keeps beside the file (local-stack.ts), for each the environment leaves unset:
 * `seed --admit-per-second` / `--require-sale-token` check that the API can issue tokens, `seed
 * --challenge pow` that it can sign proofs of work, and a second terminal should not need them
 * set to be served.
 */
function keptSecrets(dataDir: string, env: Env): Record<string, string> {
  const files = {
    SALE_TOKEN_SECRET: SALE_TOKEN_SECRET_FILE,
    CHALLENGE_POW_SECRET: CHALLENGE_POW_SECRET_FILE,
  };
  return Object.fromEntries(
    Object.entries(files).flatMap(([name, kept]) => {
      const file = join(resolve(dataDir), kept);
      return env[name] || !existsSync(file) ? [] : [[name, readFileSync(file, 'utf8').trim()]];
    }),
  );
}
