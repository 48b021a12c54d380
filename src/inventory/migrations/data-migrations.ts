/**
 * Redis data migrations, run once each, like the SQL migrator: the names applied are recorded in
 * a hash (Keys.dataMigrations), so a start reads that hash (one command) and runs only what is
 * new. A restart during a sale is back in the time its SQL check takes, whatever the catalogue.
 *
 * Each migration must be safe to run twice (two starts at once may both run it) and must not
 * need the old version's processes to be stopped, unless its own comment says so.
 */
import type { Logger } from '../../log.js';
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { serverNowMs } from '../../redis/time.js';
import { giveCatalogueNumber } from '../catalogue/catalogue-numbers.js';
import { migrateSegmentKeys } from './key-migration.js';

export interface DataMigrationDeps {
  redis: RedisClient;
  keys: Keys;
  logger?: Logger | undefined;
}

interface DataMigration {
  name: string;
  run(deps: DataMigrationDeps): Promise<string | undefined>;
}

/** Products handed to one ZADD. */
const CHUNK = 1_000;

/** In the order they run; never rename or remove one (its name is what is recorded). */
export const DATA_MIGRATIONS: readonly DataMigration[] = [
  {
    // segment keys from before spread hash tags (one Redis only; no old process selling)
    name: '0001-spread-segment-tags',
    async run(deps) {
      const renamed = await migrateSegmentKeys(deps);
      return renamed > 0 ? `moved ${renamed} segment keys to spread hash tags` : undefined;
    },
  },
  {
    // every product gets a catalogue number, which the order ids minted from now on carry
    name: '0002-catalogue-numbers',
    async run(deps) {
      const ids = await deps.redis.smembers(deps.keys.products());
      for (const id of ids) await giveCatalogueNumber(deps, id);
      return ids.length ? `numbered ${ids.length} products` : undefined;
    },
  },
  {
    // every product is active once: the sweeper then archives those with no work left
    name: '0003-active-products',
    async run(deps) {
      const ids = await deps.redis.smembers(deps.keys.products());
      const now = await serverNowMs(deps.redis);
      for (let i = 0; i < ids.length; i += CHUNK) {
        const members = ids.slice(i, i + CHUNK).flatMap((id) => [now, id]);
        await deps.redis.zadd(deps.keys.active(), 'GT', ...members);
      }
      return ids.length ? `put ${ids.length} products in the active set` : undefined;
    },
  },
  {
    // Idempotency-Key records moved beside the home segment: the old place is read on a miss
    // while its records may live (a previous version's processes may still write it)
    name: '0004-idempotency-beside-home-segment',
    async run(deps) {
      const found = await noteLegacyIdempotencyRecords(deps);
      return found ? `${found} keys of records in the old place stay readable` : undefined;
    },
  },
];

/**
 * Runs the data migrations not applied yet, in order, recording each once done.
 * @returns what each one that ran did (its name, and a note when it changed something)
 */
export async function migrateRedisData(
  deps: DataMigrationDeps,
  migrations: readonly DataMigration[] = DATA_MIGRATIONS,
): Promise<string[]> {
  const applied = await deps.redis.hgetall(deps.keys.dataMigrations());
  const ran: string[] = [];
  for (const m of migrations) {
    if (applied[m.name]) continue;
    const note = await m.run(deps);
    await deps.redis.hset(deps.keys.dataMigrations(), m.name, new Date().toISOString());
    ran.push(note ? `${m.name} (${note})` : m.name);
    deps.logger?.info({ migration: m.name, note }, 'Redis data migration applied');
  }
  return ran;
}

// Idempotency-Key records moved from one place per shopper (`{idem:<user>}`, every product) to
// beside the shopper's home segment of the product bought; records in the old place stay readable
// for their lifetime: IdempotencyStore reads the old place on a miss until the time noted here.

/**
 * A previous version's processes may still write the old place while a rolling deploy replaces
 * them: the window covers a record claimed that long after the migration ran.
 */
const ROLLOUT_MS = 60 * 60_000;

/**
 * Records until when records in the old place may live (the longest such record's expiry, or a
 * rollout's length when a previous version may still be selling), or nothing on a fresh install.
 * @returns the number of old-place keys found
 */
async function noteLegacyIdempotencyRecords(deps: DataMigrationDeps): Promise<number> {
  const { redis, keys } = deps;
  const pattern = `${keys.legacyIdempotency('x').all.slice(0, -'x}#all'.length)}*`;
  let found = 0;
  let longestMs = 0;
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) {
        found++;
        longestMs = Math.max(longestMs, await node.pttl(key));
      }
    } while (cursor !== '0');
  }
  const sold = (await redis.scard(keys.products())) > 0;
  if (found === 0 && !sold) return 0;
  const now = await serverNowMs(redis);
  await redis.set(keys.idempotencyLegacyUntil(), String(now + Math.max(longestMs, 0) + ROLLOUT_MS));
  return found;
}
