/**
 * Reconciliation's cut of one segment: its state, buyer markers, spill claims, outbox, returned and
 * spilled orders, the server time and the newest outbox id, read in one MULTI (atomic per segment)
 * and decoded here, where the record formats live. orders/reconcile.ts does the arithmetic on what this returns.
 */
import { execByNode } from '../../redis/batch.js';
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import { loadScripts, registerScripts } from '../../redis/scripts.js';
import { timeReplyMs } from '../../redis/time.js';
import { queueOutboxCut } from './protocol.js';
import { decodeClaim, type SpillClaim } from '../records/claim.js';
import { STATE_FIELD } from '../records/hash-fields.js';
import { decodeMarker, type BuyerMarker } from '../records/marker.js';
import { decodeOutboxEntry, type SoldOrder, type StreamEntry } from '../records/outbox-entry.js';

export interface SegmentSnapshot {
  /**
   * The state hash's fields as stored (null when absent): the report quotes them as they are.
   */
  state: {
    stock: string | null;
    epoch: string | null;
    sold: string | null;
    returned: string | null;
    /** net units an operator put on sale (+) or took off it (-) here (lua/dropUnits-1.lua) */
    added: string | null;
    /** units operators took off sale this epoch; null on an epoch an older version seeded */
    taken: string | null;
  };
  /** buyer -> marker */
  markers: Array<[userId: string, marker: BuyerMarker]>;
  /** buyer -> open spill claim */
  claims: Array<[userId: string, claim: SpillClaim]>;
  /** the outbox, oldest first (every epoch's entries) */
  outbox: SoldOrder[];
  /** Redis server time of the read, ms */
  atMs: number;
  /** orderId -> units its restock recorded as returned (older epochs' ones too) */
  returnedOrders: Array<[orderId: string, units: number]>;
  /** the spill sales this segment gave units to and still holds (lua/deduct-7.lua) */
  spilled: string[];
  /**
   * whether its epoch records every spill sale in `spilled` (seeded by this version): on an epoch
   * an older version seeded, a spill missing there is no sign of a loss
   */
  recordsSpills: boolean;
  /** the newest outbox id at the read ("0-0": none) */
  cut: string;
}

export async function readSegmentSnapshot(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  seg: number,
): Promise<SegmentSnapshot> {
  const k = deps.keys.segment(productId, seg);
  registerScripts(deps.redis);
  const read = () => {
    const tx = deps.redis
      .multi()
      .hmget(
        k.state,
        STATE_FIELD.stock,
        STATE_FIELD.epoch,
        STATE_FIELD.sold,
        STATE_FIELD.returned,
        STATE_FIELD.recordsSpills,
        STATE_FIELD.added,
        STATE_FIELD.taken,
      )
      .hgetall(k.buyers)
      .hgetall(k.claims)
      .xrange(k.outbox, '-', '+')
      .time()
      .hgetall(k.returned)
      .hkeys(k.spilled);
    return queueOutboxCut(tx, k.outbox).exec();
  };
  // every reply is a value: readRetried throws a failed one
  const r = await readRetried(deps.redis, read);
  if (!r) throw new Error('reconcile: MULTI aborted');
  const [
    stock = null,
    epoch = null,
    sold = null,
    returned = null,
    recordsSpills = null,
    added = null,
    taken = null,
  ] = r[0]![1] as Array<string | null>;
  return {
    state: { stock, epoch, sold, returned, added, taken },
    markers: Object.entries(r[1]![1] as Record<string, string>).map(([user, raw]) => [
      user,
      decodeMarker(raw)!,
    ]),
    claims: Object.entries(r[2]![1] as Record<string, string>).map(([user, raw]) => [
      user,
      decodeClaim(raw)!,
    ]),
    outbox: (r[3]![1] as StreamEntry[]).map(decodeOutboxEntry),
    atMs: timeReplyMs(r[4]![1] as [string, string]),
    returnedOrders: Object.entries(r[5]![1] as Record<string, string>).map(([id, units]) => [
      id,
      Number(units),
    ]),
    spilled: r[6]![1] as string[],
    recordsSpills: recordsSpills === '1',
    cut: r[7]![1] as string,
  };
}

/** A transaction refused for a reason that a moment fixes (a failover, a slot moving). */
const PASSING = /NOSCRIPT|EXECABORT|MOVED|ASK|TRYAGAIN|CLUSTERDOWN/;

/**
 * Runs a read-only MULTI, again (at most twice more) when a failover or a slot move refused it.
 * A node without the script (a promoted replica's cache is empty) gets the scripts loaded:
 * inside a MULTI, ioredis cannot fall back from EVALSHA to EVAL.
 */
async function readRetried(
  redis: RedisClient,
  read: () => Promise<Array<[Error | null, unknown]> | null>,
): Promise<Array<[Error | null, unknown]> | null> {
  for (let attempt = 1; ; attempt++) {
    let failed: Error | undefined;
    let r: Awaited<ReturnType<typeof read>> = null;
    try {
      r = await read();
      failed = r?.find(([err]) => err)?.[0] ?? undefined;
    } catch (err) {
      failed = err as Error;
    }
    if (!failed || attempt === 3 || !PASSING.test(failed.message)) {
      if (failed) throw failed;
      return r;
    }
    if (/NOSCRIPT/.test(failed.message)) await loadScripts(redis);
    await new Promise((res) => setTimeout(res, 100 * attempt));
  }
}

/** The newest outbox id of each of the product's segments (one pipeline per Redis node). */
export async function lastOutboxIds(
  deps: { redis: RedisClient; keys: Keys },
  productId: string,
  segments: number,
): Promise<string[]> {
  const outboxes = Array.from(
    { length: segments },
    (_, seg) => deps.keys.segment(productId, seg).outbox,
  );
  registerScripts(deps.redis);
  const replies = await execByNode(deps.redis, outboxes, (k) => k, queueOutboxCut);
  return replies.map(([id]) => id as string);
}
