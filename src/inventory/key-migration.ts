/**
 * Products seeded before segments got spread hash tags (spread.ts) keep their segments under the
 * plain tag `{P:i}`. This renames those keys to the spread names, once, on one Redis (a Redis
 * Cluster could only be used with spread tags, so it has none to rename). `seckill migrate` and
 * `seckill up` run it; no process of the old version may be selling meanwhile.
 */
import type { Logger } from '../log.js';
import { Cluster, type RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { readMeta } from './product-state.js';

/** @returns how many keys were renamed */
export async function migrateSegmentKeys(deps: {
  redis: RedisClient;
  keys: Keys;
  logger?: Logger | undefined;
}): Promise<number> {
  const { redis, keys } = deps;
  if (redis instanceof Cluster) return 0;
  let renamed = 0;
  for (const productId of await redis.smembers(keys.products())) {
    const segments = (await readMeta(deps, productId))?.maxSegments ?? 0;
    for (let i = 0; i < segments; i++) {
      const oldTag = `${keys.prefix}:{${productId}:${i}}`;
      const newTag = `${keys.prefix}:{${keys.segmentLockName(productId, i)}}`;
      if (oldTag === newTag) continue;
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${oldTag}:*`, 'COUNT', 1000);
        cursor = next;
        for (const key of found) {
          if (await redis.renamenx(key, newTag + key.slice(oldTag.length))) renamed++;
          else deps.logger?.warn({ key }, 'segment key not renamed: its new name exists already');
        }
      } while (cursor !== '0');
    }
  }
  if (renamed > 0) deps.logger?.info({ renamed }, 'segment keys moved to spread hash tags');
  return renamed;
}
