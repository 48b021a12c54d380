/** The purchase: one `POST /seckill`, through admission, the sale and the order's hand-off. */
export { Checkout, type CheckoutDeps, type OrderSink, type Resolution } from './checkout.js';
export {
  requestFingerprint,
  type Begin,
  type IdempotencyHandle,
  type IdempotencyRecord,
  type IdempotencyRecords,
  type PurchaseAnswer,
  type StoredResponse,
} from './idempotency.js';
export {
  PurchaseService,
  type PurchaseCall,
  type PurchaseDeps,
  type PurchaseOrder,
  type PurchaseOutcome,
} from './purchase.js';
export { noteRefused, type NoteTried } from './refused-note.js';
