/**
 * A keyed purchase folded into its home deduct: the Idempotency-Key record read, and written as
 * the claim and the settle would leave it, in the deduct's own call (lua/deductKeyed-10.lua, or
 * lua/deductKeyedFree-14.lua on a locked segment whose lock is free). One round trip where the
 * claim, the deduct and the settle take three. Whatever the call cannot finish (a record found,
 * the shopper's records at their cap, a busy lock, a refusal) it leaves unwritten and says so:
 * the purchase then claims the key the usual way. A sale's record is written without an entry in
 * the shopper's index (lua/includes/keyedRecord.lua says why). The shopper's rate-limit cell, when
 * asked, is taken by the same call once the record lets it go on, as the plain deduct takes it.
 */
import type { DeductCall, PurchaseDeductArgs } from './activity-leases.js';
import { deductKeyed, type FoldedRecord, type KeyedReply } from '../keyed-protocol.js';
import type { RecordWritten } from './outcome.js';
import type { SegmentLocking } from './segment-locking.js';

/** a segment's keys, as every deduct call takes them */
type SegmentKeys = Parameters<DeductCall<KeyedReply>>[1];

/**
 * The home deduct (mode home, or claim when home is known empty) with the key's record: on a
 * locked segment (`locked`) only while nobody in this process wants its lock (the lock taken and
 * given back in the call; a claim needs no lock).
 * @returns the call's reply; undefined when it cannot be made (nothing sent, nothing written)
 */
export function keyedHomeDeduct(
  locking: SegmentLocking,
  home: SegmentKeys,
  args: PurchaseDeductArgs,
  record: FoldedRecord,
  /** the product's strategy locks its segments */
  locked: boolean,
): Promise<KeyedReply> | undefined {
  // the view changed since the store chose the record's place: the keys would not share a slot
  if (record.segment !== args.segment) return undefined;
  const lockFree = locked && args.mode === 'home';
  if (lockFree && !locking.idle(args.productId, args.segment)) return undefined;
  return locking.leases.deductBy(
    (redis, segment, withTouch) => deductKeyed(redis, segment, withTouch, record, lockFree),
    home,
    args,
  );
}

/**
 * What a folded call left under the key: the finished record with a sale, the running one with a
 * spill claim (the spill goes on under it), nothing otherwise.
 */
export function recordLeft(reply: KeyedReply): RecordWritten {
  return reply.code === 'ok' ? 'done' : reply.code === 'spill' ? 'running' : 'nothing';
}

/**
 * The folded call's replies the sale goes on with: a sale, a spill claim, a reseed's (nothing
 * written: the sale reloads and calls again). Anything else wrote nothing (a cell it took is the
 * purchase's: the usual way asks none).
 */
export const GOES_ON: ReadonlySet<KeyedReply['code']> = new Set([
  'ok',
  'spill',
  'stale-epoch',
  'unknown',
]);
