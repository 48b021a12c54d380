/**
 * What a purchase call comes to (src/services/purchase/purchase.ts), and the few outcomes its paths share:
 * the claimed, the folded and the unkeyed purchase answer a sale, a refusal, a lost answer and the
 * shopper's rate limit alike. Answers are what they mean (PurchaseAnswer): the HTTP edge renders
 * them, and a key's record keeps them so.
 */
import type { RateDecision } from '../../access/index.js';
import type {
  PurchaseAnswer,
  SaleErrorCode,
  SaleRefusal,
  SaleReply,
} from '../../inventory/index.js';
import type { AdmissionRefusal, RateState } from '../admission/index.js';

/** Refusals that hold for this request for good: stored and replayed to a retry with its key. */
export const FINAL: ReadonlySet<SaleErrorCode> = new Set([
  'sold-out',
  'insufficient-stock',
  'limit-reached',
  'ended',
]);

/** What became of a purchase call; `rate` is the rate limits' state once they were asked. */
export type PurchaseOutcome = { rate?: RateState | undefined } &
  /** the purchase's answer; `replayed`: the one its key held */
  (
    | { kind: 'answer'; answer: PurchaseAnswer; replayed: boolean }
    | { kind: 'admission-refused'; refusal: AdmissionRefusal }
    | { kind: 'key-reused' }
    /** another request with this key runs: the first (`retrying` false) or a retry of it */
    | { kind: 'key-in-use'; orderId?: string | undefined; retrying: boolean }
    | { kind: 'key-records-full'; retryAfterMs: number }
    /** the store failed mid-purchase (`pending`: the sale of this order is still completing) */
    | { kind: 'outcome-unknown'; orderId: string; cause: unknown; pending: boolean }
  );

/** An outcome on its way out, with the shopper's cell as the sale's home deduct took it. */
export type Ended = PurchaseOutcome & { bucket?: RateDecision | undefined };

export const sold = (
  orderId: string,
  order: { productId: string; quantity: number },
): PurchaseAnswer => ({
  kind: 'sold',
  orderId,
  productId: order.productId,
  quantity: order.quantity,
});

export const answered = (answer: PurchaseAnswer, replayed = false): PurchaseOutcome => ({
  kind: 'answer',
  answer,
  replayed,
});

/** The outcome of a refusal answered now, one per refusal (a refusal made once is answered often). */
const refusedNow = new WeakMap<SaleRefusal, PurchaseOutcome>();

export function refused(refusal: SaleRefusal): PurchaseOutcome {
  let outcome = refusedNow.get(refusal);
  if (!outcome) refusedNow.set(refusal, (outcome = answered({ kind: 'refused', refusal })));
  return outcome;
}

/**
 * The sale's home deduct refused the shopper's cell: a placeholder outcome, always replaced by
 * the refusal admission settles from the cell's state (purchase()).
 */
export const RATE_LIMITED: PurchaseOutcome = {
  kind: 'admission-refused',
  refusal: { code: 'rate-limited', detail: 'over the user limit' },
};

/**
 * Whether the shopper is done buying, so a room's seat can go: a sale, or its replay (its first
 * answer may have been lost: a 503 that sold); or limit-reached answered now (an earlier try
 * sold). A replayed refusal freed the seat when it was first answered.
 */
export function boughtAll(answer: PurchaseAnswer, replayed: boolean): boolean {
  if (answer.kind === 'sold') return true;
  if (answer.kind === 'sent') return answer.sold;
  return !replayed && answer.refusal.code === 'limit-reached';
}

export const unknown = (orderId: string, cause: unknown, pending = false): PurchaseOutcome => ({
  kind: 'outcome-unknown',
  orderId,
  cause,
  pending,
});

/** A plan without the key's record: its reply is never `unfolded`. */
export function unkeyed(reply: SaleReply): Exclude<SaleReply, { kind: 'unfolded' }> {
  if (reply.kind === 'unfolded') {
    throw new Error('a purchase without a key record came back unfolded');
  }
  return reply;
}
