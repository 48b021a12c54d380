/**
 * What a purchase comes to (Sale.purchase, Sale.purchaseFolded): a value for every ordinary end,
 * a refusal or the shopper's rate limit included, and for a failure of the store. Beside it, what
 * the purchase did on its way that its caller settles: the shopper's rate-limit cell, once a call
 * took it, and what a folded purchase left under its Idempotency-Key.
 */
import type { RateDecision } from '../../redis/rate-limit.js';
import type { SaleError } from '../errors.js';
import type { SoldOrder } from '../records/outbox-entry.js';

export type SaleOutcome = SaleEnd & {
  /** the shopper's bucket's answer, once a call of this purchase took its cell */
  bucket?: RateDecision | undefined;
};

export type SaleEnd =
  | { kind: 'sold'; order: SoldOrder }
  | { kind: 'refused'; refusal: SaleError }
  /** the shopper's bucket refused the cell: nothing was sold or changed */
  | { kind: 'rate-limited' }
  /** the store failed mid-purchase (no reply, a lost connection): it may have sold */
  | { kind: 'failed'; cause: unknown };

/**
 * A folded purchase's end (the home deduct reads and writes the key's record itself): one more,
 * `unfolded` (the call wrote nothing; `found` is the record the key held), and what it left
 * under the key.
 */
export type FoldedOutcome = (SaleEnd | { kind: 'unfolded'; found?: string | undefined }) & {
  bucket?: RateDecision | undefined;
  /**
   * What the purchase left under the key: nothing; the finished record; the running one (a spill
   * went on under it, to be settled as after a claim); or unknown (a call got no reply).
   */
  record: RecordWritten;
};

export type RecordWritten = 'nothing' | 'done' | 'running' | 'unknown';

/** What one purchase did so far, across its attempts: kept by the sale, returned with its end. */
export interface Trip {
  bucket?: RateDecision | undefined;
  record: RecordWritten;
}
