/** Where the Redis Cluster's seed nodes are: given, or the launcher's local cluster's masters. */
import type { Env } from './env.js';

/** The cluster's seed nodes: the given ones, or the masters of the launcher's local cluster. */
export function clusterNodes(
  env: Pick<Env, 'REDIS_CLUSTER_NODES' | 'REDIS_URL' | 'LOCAL_REDIS_SHARDS' | 'LOCAL_REDIS_PORT'>,
): Array<{ host: string; port: number }> | undefined {
  if (env.REDIS_CLUSTER_NODES) {
    return env.REDIS_CLUSTER_NODES.split(',').map((hp) => {
      const i = hp.lastIndexOf(':');
      return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
    });
  }
  if (env.REDIS_URL || env.LOCAL_REDIS_SHARDS < 3) return undefined;
  return Array.from({ length: env.LOCAL_REDIS_SHARDS }, (_, i) => ({
    host: '127.0.0.1',
    port: env.LOCAL_REDIS_PORT + i,
  }));
}
