/**
 * Which Redis Cluster shards this process saw fail a moment ago: the connection's breaker
 * (src/redis/shard-breaker.ts, marked on the first timeout or connection error, cleared by a probe)
 * or a sale's own store outage there (held a moment). A purchase whose home segment lives on one
 * is refused at once (503): the shopper's purchase record is there, and selling without it could
 * pass the per-user limit. A spill skips segments there, so a dead shard does not stop the live
 * ones from selling. On one Redis there are no shards: nothing is ever marked.
 */
import { nodeOfKey } from '../../redis/batch.js';
import type { RedisClient } from '../../redis/connection.js';
import { shardDown, storeOutage } from '../../outages.js';
import { sickShard } from '../../redis/shard-breaker.js';
import { SaleError } from '../errors.js';

/** How long a failed shard is skipped before a purchase tries it again. */
export const SHARD_DOWN_HOLD_MS = 1_000;

export class ShardHealth {
  private readonly downUntil = new Map<string, number>();

  constructor(
    private readonly redis: RedisClient,
    private readonly holdMs = SHARD_DOWN_HOLD_MS,
  ) {}

  /** The shard ("host:port") holding `key` when it failed within the hold time; else undefined. */
  down(key: string): string | undefined {
    const shard = nodeOfKey(this.redis, key);
    if (!shard) return undefined;
    if (sickShard(this.redis, shard)) return shard;
    if (this.downUntil.size === 0) return undefined;
    const until = this.downUntil.get(shard);
    if (until === undefined) return undefined;
    if (Date.now() < until) return shard;
    this.downUntil.delete(shard);
    return undefined;
  }

  /** Records that a command on `key` failed; only store outages mark its shard. */
  failed(key: string, err: unknown): void {
    if (!storeOutage(err) || shardDown(err)) return; // refused unsent: the breaker holds it
    const shard = nodeOfKey(this.redis, key);
    if (shard) this.downUntil.set(shard, Date.now() + this.holdMs);
  }

  /** Shards currently marked (for the admin view and logs). */
  marked(): string[] {
    const now = Date.now();
    return [...this.downUntil].filter(([, until]) => until > now).map(([shard]) => shard);
  }
}

/** Refused without a command: the segment's Redis shard failed a moment ago. Nothing was sold. */
export function shardUnavailable(productId: string, seg: number, shard = 'a shard'): SaleError {
  return new SaleError({
    code: 'shard-unavailable',
    message:
      `segment ${seg} of "${productId}" lives on Redis shard ${shard}, which is not answering; ` +
      'nothing was sold: try again in a moment',
  });
}
