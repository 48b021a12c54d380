/**
 * The use cases between the HTTP layer and storage. Routers (and the CLI) get these, built once
 * per process by the composition root; none of them is an Express or Redis detail.
 */
import type { Checkout } from './purchase/checkout.js';
import type { IdempotencyRecords } from './purchase/idempotency.js';
import type { OrderLookup } from './orders/lookup.js';
import type { Payments } from './orders/payments.js';
import type { Admission } from './admission/admission.js';
import type { WaitingRoom } from './room/waiting-room.js';
import type { Products } from './operator/products.js';

export { Checkout, type CheckoutDeps, type OrderSink, type Resolution } from './purchase/checkout.js';
export {
  requestFingerprint,
  type Begin,
  type IdempotencyHandle,
  type IdempotencyRecord,
  type IdempotencyRecords,
  type PurchaseAnswer,
  type StoredResponse,
} from './purchase/idempotency.js';
export { OrderLookup, type OrderReader, type OrderStatus, type OrderView } from './orders/lookup.js';
export {
  Payments,
  type ConflictState,
  type IntentView,
  type PaymentOutcome,
  type StartPaymentOutcome,
} from './orders/payments.js';
export { DashboardFeed, type DashboardSnapshot } from './dashboard/feed.js';
export {
  audited,
  type AuditActor,
  type AuditedChange,
  type AuditEntry,
  type AuditOutcome,
  type AuditStore,
} from './operator/audit-log.js';
export { DropService, type DropAction, type DropPort } from './operator/drop-controls.js';
export {
  AdminAccess,
  isAdminToken,
  SESSION_MS,
  type AdminSession,
  type AdminSessions,
} from './operator/admin-access.js';
export {
  Admission,
  rateLimitHeaders,
  type AdmissionRefusal,
  type LimitedRoute,
  type RateLimiter,
  type RateState,
} from './admission/admission.js';
export {
  checkSaleToken,
  sameSignature,
  signSaleToken,
  type SaleTokenClaims,
} from './admission/sale-token.js';
export { Products, type AdminProductView } from './operator/products.js';
export {
  ROTATION_GRACE_HOURS,
  WebhookEndpoints,
  type DeadLetterView,
  type EndpointView,
  type Registration,
} from './operator/webhook-endpoints.js';
export {
  MAX_PAGE,
  OrderFeed,
  type EventPage,
  type FeedSources,
  type OrderPage,
} from './orders/feed.js';
export {
  PurchaseService,
  type PurchaseCall,
  type PurchaseDeps,
  type PurchaseOrder,
  type PurchaseOutcome,
} from './purchase/purchase.js';
export {
  DEFAULT_SEGMENTS,
  seedRefusal,
  seedRequest,
  seedSpecOf,
  type SeedRequest,
} from './operator/seed-request.js';

export { PollLimit } from './room/poll-limit.js';
export {
  WaitingRoom,
  type PlaceAnswer,
  type PlaceState,
  type PlaceView,
  type RoomMetricsPort,
} from './room/waiting-room.js';

export interface Services {
  checkout: Checkout;
  products: Products;
  orders: OrderLookup;
  payments: Payments;
  admission: Admission;
  idempotency: IdempotencyRecords;
  /** waiting rooms (none: the queue routes answer 404) */
  waitingRoom?: WaitingRoom | undefined;
  /** a shopper bought: frees their seat in the product's waiting room, if it has one */
  bought?: ((productId: string, userId: string) => void) | undefined;
}
