/**
 * The use cases between the HTTP layer and storage, one room each (docs/design/sale.md, the layers): the
 * purchase, admission, the waiting room, orders and payments, the operator's tools, and the
 * dashboard's read models. Routers (and the CLI) get these, built once per process by the
 * composition root; none of them is an Express or Redis detail. This door is the only way in.
 */
import type { Checkout, IdempotencyRecords } from './purchase/index.js';
import type { OrderLookup, PaymentNotices, Payments } from './orders/index.js';
import type { Admission, ChallengeGate } from './admission/index.js';
import type { TurnPush, WaitingRoom } from './room/index.js';
import type { Products } from './operator/index.js';
import type { DrawEntries, EntryViews, Transcripts } from './draw/index.js';
import type { FairnessNotes, FairnessReports } from './fairness/index.js';

export * from './purchase/index.js';
export * from './admission/index.js';
export * from './room/index.js';
export * from './orders/index.js';
export * from './operator/index.js';
export * from './dashboard/index.js';
export * from './draw/index.js';
export * from './fairness/index.js';
export { sameSignature } from './same-signature.js';

export interface Services {
  checkout: Checkout;
  products: Products;
  orders: OrderLookup;
  payments: Payments;
  /** the payment providers' notices (POST /payments/webhook, /payments/stripe) */
  notices: PaymentNotices;
  admission: Admission;
  idempotency: IdempotencyRecords;
  /** waiting rooms (none: the queue routes answer 404) */
  waitingRoom?: WaitingRoom | undefined;
  /** the turn's Web Push (none without VAPID keys: the page offers none) */
  turnPush?: TurnPush | undefined;
  /** a shopper bought: frees their seat in the product's waiting room, if it has one */
  bought?: ((productId: string, userId: string) => void) | undefined;
  /** draws: entries, an entry's view, the public transcript (none: the draw routes answer 404) */
  draws?: { entries: DrawEntries; views: EntryViews; transcripts: Transcripts } | undefined;
  /** who tried each sale, noted off the request path */
  fairnessNotes?: FairnessNotes | undefined;
  fairness?: FairnessReports | undefined;
  /** the challenge at the door (CHALLENGE; none: off) */
  door?: ChallengeGate | undefined;
}
