/**
 * A product as it stands in Redis: its meta and every segment's stock, units sold and outbox
 * backlog, read in one pipeline per Redis node, with the status by Redis server time.
 */
import { pipelineByNode, type Reply } from '../../redis/batch.js';
import { shardOfKey } from '../../redis/shard-health.js';
import { storeOutage } from '../../outages.js';
import type { RedisClient } from '../../redis/connection.js';
import type { Strategy } from '../../db/schema.js';
import type { Keys } from '../../redis/keys.js';
import { timeReplyMs } from '../../redis/time.js';
import { activeProducts } from './active-set.js';
import {
  decodeMeta,
  isSoldOut,
  type Price,
  type ProductMeta,
  type DrawWindow,
  type ProductChallenge,
  type RoomSettings,
} from '../records/product-meta.js';
import { decodeSegmentState, SEGMENT_STATE_FIELDS } from '../records/segment-state.js';
import { STATE_FIELD } from '../records/hash-fields.js';

export interface SegmentView {
  segment: number;
  stock: number;
  sold: number;
  /** units of cancelled, expired and refunded orders put back on sale here */
  returned: number;
  /** net units an operator put on sale (+) or took off it (-) here */
  added: number;
  /** orders in this segment's outbox, not yet confirmed persisted */
  pending: number;
  /** on a Redis Cluster: the master holding the segment ("host:port") */
  shard?: string;
  /** its shard did not answer: stock, sold and pending are unknown (shown as 0) */
  unreachable?: true;
}

export type ProductStatus = 'upcoming' | 'live' | 'paused' | 'sold out' | 'ended';

export interface ProductState {
  productId: string;
  epoch: number;
  total: number;
  strategy: Strategy;
  limitPerUser: number;
  /** seconds buyers have to pay; 0: every sale is final */
  payWithinSeconds: number;
  /** an operator paused the sale */
  paused: boolean;
  /** the waiting room's settings; null: no room */
  waitingRoom: RoomSettings | null;
  /** the draw's entry window; null: first come */
  draw: DrawWindow | null;
  /** the product's own challenge at the door; null: none; 'default': the deployment's */
  challenge: ProductChallenge | null | 'default';
  startsAt: number;
  endsAt: number;
  soldOut: boolean;
  remaining: number;
  sold: number;
  returned: number;
  status: ProductStatus;
  segments: SegmentView[];
  /** the unit price of this epoch's sales; null when unpriced */
  price: Price | null;
}

export interface StoreDeps {
  redis: RedisClient;
  keys: Keys;
}

/** The product's meta; null when it was never seeded. */
export async function readMeta(deps: StoreDeps, productId: string): Promise<ProductMeta | null> {
  return decodeMeta(await deps.redis.hgetall(deps.keys.product(productId).meta));
}

function shardOf(redis: RedisClient, key: string): { shard?: string } {
  const shard = shardOfKey(redis, key);
  return shard ? { shard } : {};
}

function statusAt(now: number, meta: ProductMeta, remaining: number): ProductStatus {
  if (meta.endsAt > 0 && now >= meta.endsAt) return 'ended';
  if (remaining === 0) return 'sold out';
  if (now < meta.startsAt) return 'upcoming';
  return meta.paused ? 'paused' : 'live';
}

/**
 * Up to `max` active products (upcoming, live or recently sold from: the ones staying active
 * longest), by id, each as it stands: what the operator views show. Archived sales are left out,
 * so the cost follows the sales under way, not the catalogue (GET /admin/products/:id reads any).
 */
export async function readProductStates(deps: StoreDeps, max: number): Promise<ProductState[]> {
  const ids = (await activeProducts(deps, max)).map((p) => p.productId).sort();
  const states = await Promise.all(ids.map((id) => readProductState(deps, id)));
  return states.filter((s): s is ProductState => s !== null);
}

/** Reads a product's meta and every segment (one pipeline); null when never seeded. */
export async function readProductState(
  deps: StoreDeps,
  productId: string,
): Promise<ProductState | null> {
  const meta = await readMeta(deps, productId);
  if (!meta) return null;
  const n = meta.segments;
  const indexes = Array.from({ length: n }, (_, i) => i);
  // per node of a cluster (segments spread over shards); TIME rides with each segment's batch
  const replies = await pipelineByNode(
    deps.redis,
    indexes,
    (i) => deps.keys.segment(productId, i).state,
    (pipeline, i) => {
      const k = deps.keys.segment(productId, i);
      pipeline
        .hmget(k.state, ...SEGMENT_STATE_FIELDS)
        .xlen(k.outbox)
        .time();
    },
    // TIME answers on any node: a segment whose slot moved is read again whole
    { reads: true },
  );
  let now: number | undefined;
  const segments: SegmentView[] = indexes.map((i) => {
    const shard = shardOf(deps.redis, deps.keys.segment(productId, i).state);
    const failed = replies[i]!.find(([err]) => err)?.[0];
    if (failed) {
      // a Redis Cluster shard that is down: say so, and show the rest
      if (!storeOutage(failed)) throw failed;
      return {
        segment: i,
        stock: 0,
        sold: 0,
        returned: 0,
        added: 0,
        pending: 0,
        ...shard,
        unreachable: true,
      };
    }
    const [[, fields], [, pending], [, time]] = replies[i] as [Reply, Reply, Reply];
    now ??= timeReplyMs(time as [string, string]);
    const state = decodeSegmentState(fields as Array<string | null>);
    return {
      segment: i,
      stock: state?.stock ?? 0,
      sold: state?.sold ?? 0,
      returned: state?.returned ?? 0,
      added: state?.added ?? 0,
      pending: pending as number,
      ...shard,
    };
  });
  if (n > 0 && now === undefined) throw replies[0]![0]![0]!; // no segment answered
  const remaining = segments.reduce((a, s) => a + s.stock, 0);
  const unreachable = segments.some((s) => s.unreachable);
  return {
    productId,
    epoch: meta.epoch,
    // on sale this epoch: the seeded total and what operators added or took off since
    total: meta.total + segments.reduce((a, s) => a + s.added, 0),
    strategy: meta.strategy,
    limitPerUser: meta.limitPerUser,
    payWithinSeconds: meta.payWithinSeconds,
    paused: meta.paused,
    waitingRoom: meta.waitingRoom,
    draw: meta.draw,
    challenge: meta.challenge,
    startsAt: meta.startsAt,
    endsAt: meta.endsAt,
    soldOut: isSoldOut(meta) || (remaining === 0 && !unreachable),
    remaining,
    sold: segments.reduce((a, s) => a + s.sold, 0),
    returned: segments.reduce((a, s) => a + s.returned, 0),
    status: statusAt(now ?? Date.now(), meta, unreachable ? Math.max(remaining, 1) : remaining),
    segments,
    price: meta.price,
  };
}

/** A segment's units as the room admitter reads them (its shard unanswering: `unreachable`). */
export interface SegmentStock {
  segment: number;
  stock: number;
  unreachable?: true;
}

/**
 * The stock of `segments` of the product's `epoch` (one HMGET each, one pipeline per Redis node:
 * the segments are spread over slots, so no one script reads them all on a Cluster); null when a
 * segment holds another epoch (a reseed under way).
 */
export async function readSegmentStock(
  deps: StoreDeps,
  productId: string,
  epoch: number,
  segments: readonly number[],
): Promise<SegmentStock[] | null> {
  const fields = [STATE_FIELD.epoch, STATE_FIELD.stock] as const;
  const replies = await pipelineByNode(
    deps.redis,
    segments,
    (i) => deps.keys.segment(productId, i).state,
    (pipeline, i) => void pipeline.hmget(deps.keys.segment(productId, i).state, ...fields),
    { reads: true },
  );
  const out: SegmentStock[] = [];
  for (const [n, segment] of segments.entries()) {
    const [[err, values]] = replies[n] as [Reply];
    if (err) {
      if (!storeOutage(err)) throw err;
      out.push({ segment, stock: 0, unreachable: true });
      continue;
    }
    const [segmentEpoch, stock] = values as Array<string | null>;
    if (segmentEpoch !== null && Number(segmentEpoch) !== epoch) return null;
    out.push({ segment, stock: Number(stock ?? 0) });
  }
  return out;
}
