/**
 * The Redis side of order persistence, behind one door: the outboxes the worker clears and the
 * sweeper re-reads, the sweeper's claims and archive, returning a closed order's units and the
 * reconciliation cut. orders/ declares what it needs as small
 * ports and gets this store; only this file (and the inventory modules it calls) knows the keys,
 * the scripts and the record formats.
 */
import { execByNode } from '../../redis/batch.js';
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { serverNowMs } from '../../redis/time.js';
import {
  activeProducts,
  archiveIfUntouched,
  forgetQuiet,
  markQuiet,
  readQuiet,
  type Quiet,
} from '../catalogue/active-set.js';
import { readMeta } from '../catalogue/product-state.js';
import { claimSettle, releaseMarker, restock, type RestockReply } from './protocol.js';
import { decodeClaim, type SpillClaim } from '../records/claim.js';
import { decodeOutboxEntry, type SoldOrder, type StreamEntry } from '../records/outbox-entry.js';
import type { ProductMeta } from '../records/product-meta.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import { lastOutboxIds, readSegmentSnapshot, type SegmentSnapshot } from './segment-snapshot.js';

export { compareStreamIds, streamIdMs } from '../../redis/time.js';

/**
 * Entries of a segment's outbox, oldest first.
 * @param range.until - stream id (or ms) of the newest entry to read; default: all.
 * @param range.count - most entries to read; default all.
 */
export async function readOutbox(
  redis: RedisClient,
  keys: Keys,
  productId: string,
  segment: number,
  range: { until?: string; count?: number } = {},
): Promise<SoldOrder[]> {
  const k = keys.segment(productId, segment).outbox;
  const entries = (
    range.count
      ? await redis.xrange(k, '-', range.until ?? '+', 'COUNT', range.count)
      : await redis.xrange(k, '-', range.until ?? '+')
  ) as StreamEntry[];
  return entries.map(decodeOutboxEntry);
}

/** Deletes persisted orders from their segments' outboxes (one pipeline per Redis node). */
export async function clearOutbox(
  redis: RedisClient,
  keys: Keys,
  orders: readonly SoldOrder[],
): Promise<void> {
  const bySegment = new Map<string, string[]>();
  for (const o of orders) {
    const k = keys.segment(o.productId, o.segment).outbox;
    let ids = bySegment.get(k);
    if (!ids) bySegment.set(k, (ids = []));
    ids.push(o.outboxId);
  }
  // XDEL is idempotent: a batch item refused during a slot move may safely be sent again
  await execByNode(
    redis,
    [...bySegment],
    ([k]) => k,
    (p, [k, ids]) => p.xdel(k, ...ids),
  );
}

/** What returning units needs to know of a closed order. */
export interface ReturnedOrder {
  productId: string;
  /** the segment its units came from */
  segment: number;
  /** its buyer's home segment (the marker) */
  homeSegment: number;
  epoch: number;
  orderId: string;
  quantity: number;
  userId: string;
  /** a refund: its units come back only while the sale runs (else `ended`) */
  refund?: boolean;
}

export class OrderStore {
  private readonly deps: { redis: RedisClient; keys: Keys };

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** durable mode: the replicas' confirmation of a segment's writes (undefined when off) */
    private readonly replicaWait?: ReplicaWait | undefined,
  ) {
    this.deps = { redis, keys };
  }

  // -- outboxes (worker, sweeper)

  readOutbox(
    productId: string,
    segment: number,
    range?: { until?: string; count?: number },
  ): Promise<SoldOrder[]> {
    return readOutbox(this.redis, this.keys, productId, segment, range);
  }

  clearOutbox(orders: readonly SoldOrder[]): Promise<void> {
    return clearOutbox(this.redis, this.keys, orders);
  }

  async outboxLength(productId: string, segment: number): Promise<number> {
    return this.redis.xlen(this.keys.segment(productId, segment).outbox);
  }

  // -- products (sweeper, reconcile)

  /** The Redis server's clock, ms. */
  serverNowMs(): Promise<number> {
    return serverNowMs(this.redis);
  }

  readMeta(productId: string): Promise<ProductMeta | null> {
    return readMeta(this.deps, productId);
  }

  activeProducts(): Promise<Array<{ productId: string; until: number }>> {
    return activeProducts(this.deps);
  }

  /** Archives `productId` unless it was touched since its score read `until`. */
  async archiveIfUntouched(productId: string, until: number): Promise<boolean> {
    const archived = await archiveIfUntouched(this.deps, productId, until);
    if (archived) await forgetQuiet(this.deps, productId);
    return archived;
  }

  /** Each active product's last touch and last quiet read (catalogue/active-set.ts). */
  readQuiet(): Promise<Quiet> {
    return readQuiet(this.deps);
  }

  /** A sweep that began at `at` found no work in any segment of `productId`. */
  markQuiet(productId: string, at: number, until: number): Promise<void> {
    return markQuiet(this.deps, productId, at, until);
  }

  // -- spill claims (sweeper)

  /** The segment's open spill claims by buyer. @throws on a field that is not a claim */
  async claims(productId: string, segment: number): Promise<Array<[string, SpillClaim | null]>> {
    const raw = await this.redis.hgetall(this.keys.segment(productId, segment).claims);
    return Object.entries(raw).map(([userId, claim]) => [userId, decodeClaim(claim)]);
  }

  /** Finalises or releases a buyer's spill claim in its home segment (lua/claimSettle-2.lua). */
  settleClaim(
    productId: string,
    homeSegment: number,
    userId: string,
    orderId: string,
    outcome: 'finalise' | 'release',
  ) {
    return claimSettle(
      this.redis,
      this.keys.segment(productId, homeSegment),
      userId,
      orderId,
      outcome,
    );
  }

  // -- durable mode (sweeper)

  /** Whether outbox entries wait for the replicas before they are handed on. */
  get durable(): boolean {
    return this.replicaWait !== undefined;
  }

  /** The Redis master holding the segment (durable mode only). */
  masterOf(productId: string, segment: number): string | undefined {
    return this.replicaWait?.masterOf(this.keys.segment(productId, segment).replicated);
  }

  /** Writes the segment's replication mark: entries written before it replicate with it. */
  async markReplicated(productId: string, segment: number, now: number): Promise<void> {
    await this.redis.set(
      this.keys.segment(productId, segment).replicated,
      String(now),
      'PX',
      86_400_000,
    );
  }

  /** Resolves once the replicas hold the segment's mark. @throws ReplicaLagError */
  async confirmReplicated(productId: string, segment: number): Promise<void> {
    await this.replicaWait?.confirm(this.keys.segment(productId, segment).replicated);
  }

  // -- returns (payment window)

  /**
   * Puts a closed (or, while its sale runs, a refunded) order's units back in the segment they
   * came from, if the sale is still held: by its home segment, or for a spill by the segment
   * that gave the unit (lua/saleHeld-2.lua, lua/restock-3.lua).
   */
  restock(order: ReturnedOrder): Promise<RestockReply> {
    const k = (segment: number) => this.keys.segment(order.productId, segment);
    return restock(this.redis, k(order.segment), k(order.homeSegment), order);
  }

  /** Takes a returned order out of its buyer's marker (lua/releaseMarker-1.lua). */
  releaseMarker(order: ReturnedOrder): Promise<boolean> {
    return releaseMarker(this.redis, this.keys.segment(order.productId, order.homeSegment), order);
  }

  // -- reconciliation

  segmentSnapshot(productId: string, segment: number): Promise<SegmentSnapshot> {
    return readSegmentSnapshot(this.deps, productId, segment);
  }

  lastOutboxIds(productId: string, segments: number): Promise<string[]> {
    return lastOutboxIds(this.deps, productId, segments);
  }
}
