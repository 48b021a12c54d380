/**
 * Products seeded before segments got spread hash tags (spread.ts) keep their segments under the
 * plain tag `{P:i}`. This renames those keys to the spread names, on one Redis (a Redis Cluster
 * could only be used with spread tags, so it has none to rename). One SCAN over the keyspace,
 * whatever the number of products and segments (a SCAN per segment took minutes at 10 000
 * products). Run once, as a data migration (data-migrations.ts); no process of the old version
 * may be selling meanwhile.
 */
import type { Logger } from '../../log.js';
import { Cluster, type RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { readMeta } from '../catalogue/product-state.js';

/** A key under a plain segment tag: `<prefix>:{<product>:<i>}:<rest>`. */
const PLAIN_SEGMENT_KEY = /^\{(.+):(\d+)\}:/;

/** @returns how many keys were renamed */
export async function migrateSegmentKeys(deps: {
  redis: RedisClient;
  keys: Keys;
  logger?: Logger | undefined;
}): Promise<number> {
  const { redis, keys } = deps;
  if (redis instanceof Cluster) return 0;
  const products = new Set(await redis.smembers(keys.products()));
  if (products.size === 0) return 0;
  const segmentsOf = new Map<string, number>();
  const head = `${keys.prefix}:`;
  let renamed = 0;
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${head}{*`, 'COUNT', 1000);
    cursor = next;
    for (const key of found) {
      const m = PLAIN_SEGMENT_KEY.exec(key.slice(head.length));
      if (!m || !products.has(m[1]!)) continue;
      const [productId, i] = [m[1]!, Number(m[2])];
      const oldTag = `${head}{${productId}:${i}}`;
      const newTag = `${head}{${keys.segmentLockName(productId, i)}}`;
      if (oldTag === newTag) continue;
      if (!segmentsOf.has(productId)) {
        segmentsOf.set(productId, (await readMeta(deps, productId))?.maxSegments ?? 0);
      }
      if (i >= segmentsOf.get(productId)!) continue;
      if (await redis.renamenx(key, newTag + key.slice(oldTag.length))) renamed++;
      else deps.logger?.warn({ key }, 'segment key not renamed: its new name exists already');
    }
  } while (cursor !== '0');
  if (renamed > 0) deps.logger?.info({ renamed }, 'segment keys moved to spread hash tags');
  return renamed;
}
