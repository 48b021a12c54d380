/**
 * A purchase as the sale takes it and gives it back: one plan in (Sale.purchase), one reply out.
 * The plan says everything the caller decided: who buys what under which order id, whether the
 * home deduct takes a cell of the shopper's rate limit, whether it reads and writes the
 * Idempotency-Key's record itself. The reply is a value for every ordinary end (a sale, a
 * refusal, the shopper's rate limit, a store that failed, a key the call could not fold), with
 * what the purchase left on its way for the caller to settle: the shopper's cell, once a call took
 * it, and what it left under the key.
 */
import type { RateLimit } from '../../config/index.js';
import type { RateDecision } from '../../redis/rate-limit.js';
import type { SaleRefusal } from '../errors.js';
import type { FoldedRecord } from '../keyed-protocol.js';
import type { SoldOrder } from '../records/outbox-entry.js';

export interface SalePlan {
  productId: string;
  userId: string;
  quantity: number;
  /** the order id to sell under (the caller's, so it can resolve a lost answer); else minted */
  orderId?: string | undefined;
  /**
   * the shopper's rate limit, a cell of which the home deduct takes (its bucket shares the home
   * slot); undefined: no cell to take (no limit, or one taken already)
   */
  rate?: RateLimit | undefined;
  /**
   * the key's record, for the home deduct to read and write itself (keyed-deduct.ts); the reply is
   * `unfolded` when it wrote nothing (the caller claims the key the usual way)
   */
  record?: FoldedRecord | undefined;
}

/** What the purchase left under the key: nothing, the finished record, the running one, or unknown. */
export type RecordWritten = 'nothing' | 'done' | 'running' | 'unknown';

export type SaleReply = (
  | { kind: 'sold'; order: SoldOrder }
  | { kind: 'refused'; refusal: SaleRefusal }
  /** the shopper's bucket refused the cell: nothing was sold or changed */
  | { kind: 'rate-limited' }
  /** the store failed mid-purchase (no reply, a lost connection): it may have sold */
  | { kind: 'failed'; cause: unknown }
  /** a plan with a record whose call wrote nothing under the key (`found`: what it held) */
  | { kind: 'unfolded'; found?: string | undefined }
) & {
  /** the shopper's bucket's answer, once a call of this purchase took its cell */
  bucket?: RateDecision | undefined;
  /** a running record is settled by the caller, as after a claim; an unknown one resolved */
  record: RecordWritten;
};
