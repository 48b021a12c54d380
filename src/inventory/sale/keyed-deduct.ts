/**
 * A keyed purchase folded into its home deduct: the Idempotency-Key record read, and written as
 * the claim and the settle would leave it, in the deduct's own call (lua/deductKeyed-10.lua, or
 * lua/deductKeyedFree-14.lua on a locked segment whose lock is free). One round trip where the
 * claim, the deduct and the settle take three. Whatever the call cannot finish (a record found,
 * the shopper's records at their cap, a busy lock, a refusal) it leaves unwritten and says so
 * ({@link NotFolded}): the purchase then claims the key the usual way. A sale's record is written
 * without an entry in the shopper's index (lua/includes/keyedRecord.lua says why). The shopper's
 * rate-limit cell, when asked, is taken by the same call once the record lets it go on, as the
 * plain deduct takes it: noted before NotFolded is thrown, so the usual way takes no second one.
 */
import type { DeductCall, PurchaseDeductArgs } from './activity-leases.js';
import { deductKeyed, type FoldedRecord, type KeyedReply } from '../keyed-protocol.js';
import type { DeductReply } from '../protocol.js';
import type { SegmentLocking } from './segment-locking.js';
import { noteBucket, type ShopperRate } from './shopper-rate.js';

export type { FoldedRecord } from '../keyed-protocol.js';

/**
 * The folded call wrote nothing, and the purchase must claim its key the usual way; `found` is
 * the record the key already held (the caller answers from it as a claim that found it would).
 */
export class NotFolded extends Error {
  constructor(readonly found?: string) {
    super(found === undefined ? 'the keyed deduct wrote nothing' : 'the key holds a record');
    this.name = 'NotFolded';
  }
}

/** a segment's keys, as every deduct call takes them */
type SegmentKeys = Parameters<DeductCall<KeyedReply>>[1];

function run(lockFree: boolean, record: FoldedRecord): DeductCall<KeyedReply> {
  return (redis, segment, args) => deductKeyed(redis, segment, args, record, lockFree);
}

/**
 * The home deduct (mode home, or claim when home is known empty) with the key's record: on a
 * locked segment (`locked`) only while nobody in this process wants its lock (the lock taken and
 * given back in the call; a claim needs no lock). @returns a sale (record finished), a spill claim
 * (record running), or a reseed's reply (nothing written: the sale reloads and calls again).
 * @throws NotFolded when nothing was written and the purchase must claim the usual way;
 *   ShopperRateLimited when the shopper's bucket refused the cell (nothing written either)
 */
export async function keyedHomeDeduct(
  locking: SegmentLocking,
  home: SegmentKeys,
  args: PurchaseDeductArgs,
  record: FoldedRecord,
  /** the product's strategy locks its segments; the shopper's limit, when taken in the call */
  { locked, rate }: { locked: boolean; rate: ShopperRate | undefined },
): Promise<DeductReply> {
  // the view changed since the store chose the record's place: the keys would not share a slot
  if (record.segment !== args.segment) throw new NotFolded();
  const lockFree = locked && args.mode === 'home';
  if (lockFree && !locking.idle(args.productId, args.segment)) throw new NotFolded();
  record.written = 'unknown';
  const r = await locking.leases.deductBy(run(lockFree, record), home, args);
  record.written = r.code === 'ok' ? 'done' : r.code === 'spill' ? 'running' : 'nothing';
  if (r.code === 'record') throw new NotFolded(r.value);
  // a cell taken (a contended lock, a full index, a refusal too) is this purchase's: the usual
  // way asks none
  noteBucket(args, rate, r);
  if (r.code === 'full') throw new NotFolded();
  if (r.code === 'ok' || r.code === 'spill' || r.code === 'stale-epoch' || r.code === 'unknown') {
    return r;
  }
  throw new NotFolded();
}
