/**
 * A keyed purchase folded into its home deduct: the Idempotency-Key record read, and written as
 * the claim and the settle would leave it, in the deduct's own call (lua/deductKeyed-10.lua, or
 * lua/deductKeyedFree-14.lua on a locked segment whose lock is free). One round trip where the
 * claim, the deduct and the settle take three. Whatever the call cannot finish (a record found,
 * the shopper's records at their cap, a busy lock, a refusal) it leaves unwritten and says so
 * (`unfolded`): the purchase then claims the key the usual way. A sale's record is written
 * without an entry in the shopper's index (lua/includes/keyedRecord.lua says why). The shopper's
 * rate-limit cell, when asked, is taken by the same call once the record lets it go on, as the
 * plain deduct takes it: noted in the trip, so the usual way takes no second one.
 */
import type { DeductCall, PurchaseDeductArgs } from './activity-leases.js';
import { deductKeyed, type FoldedRecord, type KeyedReply } from '../keyed-protocol.js';
import type { DeductReply } from '../protocol.js';
import type { Trip } from './outcome.js';
import type { SegmentLocking } from './segment-locking.js';
import { noteBucket } from './shopper-rate.js';

/** a segment's keys, as every deduct call takes them */
type SegmentKeys = Parameters<DeductCall<KeyedReply>>[1];

/** What the folded call came to: a deduct's reply to go on with, or an end. */
export type KeyedDeduct =
  | { reply: DeductReply }
  /** nothing written: claim the key the usual way (`found`: the record the key held) */
  | { unfolded: true; found?: string | undefined }
  /** the shopper's bucket refused the cell: nothing written either */
  | { rateLimited: true };

const UNFOLDED: KeyedDeduct = { unfolded: true };

/**
 * The home deduct (mode home, or claim when home is known empty) with the key's record: on a
 * locked segment (`locked`) only while nobody in this process wants its lock (the lock taken and
 * given back in the call; a claim needs no lock). Its reply is a sale (record finished), a spill
 * claim (record running), or a reseed's (nothing written: the sale reloads and calls again);
 * anything else wrote nothing. What it wrote, and the shopper's cell, go into `trip`.
 */
export async function keyedHomeDeduct(
  locking: SegmentLocking,
  home: SegmentKeys,
  args: PurchaseDeductArgs,
  record: FoldedRecord,
  /** the product's strategy locks its segments */
  locked: boolean,
  trip: Trip,
): Promise<KeyedDeduct> {
  // the view changed since the store chose the record's place: the keys would not share a slot
  if (record.segment !== args.segment) return UNFOLDED;
  const lockFree = locked && args.mode === 'home';
  if (lockFree && !locking.idle(args.productId, args.segment)) return UNFOLDED;
  trip.record = 'unknown';
  const r = await locking.leases.deductBy(
    (redis, segment, withTouch) => deductKeyed(redis, segment, withTouch, record, lockFree),
    home,
    args,
  );
  trip.record = r.code === 'ok' ? 'done' : r.code === 'spill' ? 'running' : 'nothing';
  if (r.code === 'record') return { unfolded: true, found: r.value };
  // a cell taken (a contended lock, a full index, a refusal too) is this purchase's: the usual
  // way asks none
  if (noteBucket(args, trip, r)) return { rateLimited: true };
  if (r.code === 'ok' || r.code === 'spill' || r.code === 'stale-epoch' || r.code === 'unknown') {
    return { reply: r };
  }
  return UNFOLDED;
}
