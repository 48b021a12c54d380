/**
 * What a purchase call comes to (src/services/purchase.ts), and the few outcomes its paths share:
 * the claimed, the folded and the unkeyed purchase answer a refusal, a lost answer and the
 * shopper's rate limit alike.
 */
import type { SaleErrorCode } from '../inventory/index.js';
import type { AdmissionRefusal, RateState } from './admission.js';
import type { StoredResponse } from './idempotency.js';

/** Refusals that hold for this request for good: stored and replayed to a retry with its key. */
export const FINAL: ReadonlySet<SaleErrorCode> = new Set([
  'sold-out',
  'insufficient-stock',
  'limit-reached',
  'ended',
]);

/** What became of a purchase call; `rate` is the rate limits' state once they were asked. */
export type PurchaseOutcome = { rate?: RateState | undefined } & (
  | { kind: 'answer'; response: StoredResponse; replayed: boolean }
  | { kind: 'admission-refused'; refusal: AdmissionRefusal }
  | { kind: 'key-reused' }
  /** another request with this key runs: the first (`retrying` false) or a retry of it */
  | { kind: 'key-in-use'; orderId?: string | undefined; retrying: boolean }
  | { kind: 'key-records-full'; retryAfterMs: number }
  /** the store failed mid-purchase (`pending`: the sale of this order is still completing) */
  | { kind: 'outcome-unknown'; orderId: string; cause: unknown; pending: boolean }
);

export const refused = (response: StoredResponse): PurchaseOutcome => ({
  kind: 'answer',
  response,
  replayed: false,
});

/**
 * The sale's home deduct refused the shopper's cell: a placeholder outcome, always replaced by
 * the refusal admission settles from the cell's state (purchase()).
 */
export const RATE_LIMITED: PurchaseOutcome = {
  kind: 'admission-refused',
  refusal: { code: 'rate-limited', detail: 'over the user limit' },
};

export const boughtAll = (response: StoredResponse) =>
  response.status === 202 || response.problem === 'limit-reached';

export const unknown = (orderId: string, cause: unknown, pending = false): PurchaseOutcome => ({
  kind: 'outcome-unknown',
  orderId,
  cause,
  pending,
});
