/**
 * A selling row's Redis keys, gone once its round is checked: a row that writes a key per sale
 * (a shopper's rate-limit bucket, an Idempotency-Key's record) cost Redis more, late in a full
 * run, in a keyspace of the millions of keys the rows before it left (buyer markers, records,
 * buckets expiring meanwhile) than in a partial run's. The product's own keys (its meta, in the
 * `{product}` tag) stay, so every process still knows it; its segments' (stock, buyers, outbox,
 * claims, records and buckets beside them: the `{product:segment}` tags) go.
 */
import type { Redis } from 'ioredis';

/** Unlinks every key in the segments' hash tags of these products. @returns how many */
export async function forgetSegments(redis: Redis, productIds: readonly string[]): Promise<number> {
  let gone = 0;
  for (const id of productIds) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*{${id}:*`, 'COUNT', 5_000);
      cursor = next;
      if (keys.length) gone += await redis.unlink(...keys);
    } while (cursor !== '0');
  }
  return gone;
}
