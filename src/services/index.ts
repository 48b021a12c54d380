/**
 * The use cases between the HTTP layer and storage. Routers (and the CLI) get these, built once
 * per process by the composition root; none of them is an Express or Redis detail.
 */
import type { Checkout } from './checkout.js';
import type { IdempotencyRecords } from './idempotency.js';
import type { OrderLookup } from './orders.js';
import type { Payments } from './payments.js';
import type { Admission } from './admission.js';
import type { WaitingRoom } from './waiting-room.js';
import type { Products } from './products.js';

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
export { OrderLookup, type OrderReader, type OrderStatus, type OrderView } from './orders.js';
export {
  Payments,
  type ConflictState,
  type IntentView,
  type PaymentOutcome,
  type StartPaymentOutcome,
} from './payments.js';
export { DashboardFeed, type DashboardSnapshot } from './dashboard-feed.js';
export {
  audited,
  type AuditActor,
  type AuditedChange,
  type AuditEntry,
  type AuditOutcome,
  type AuditStore,
} from './audit-log.js';
export { DropService, type DropAction, type DropPort } from './drop-controls.js';
export {
  AdminAccess,
  isAdminToken,
  SESSION_MS,
  type AdminSession,
  type AdminSessions,
} from './admin-access.js';
export {
  Admission,
  rateLimitHeaders,
  type AdmissionRefusal,
  type LimitedRoute,
  type RateLimiter,
  type RateState,
} from './admission.js';
export {
  checkSaleToken,
  sameSignature,
  signSaleToken,
  type SaleTokenClaims,
} from './sale-token.js';
export { Products, type AdminProductView } from './products.js';
export {
  ROTATION_GRACE_HOURS,
  WebhookEndpoints,
  type DeadLetterView,
  type EndpointView,
  type Registration,
} from './webhook-endpoints.js';
export {
  MAX_PAGE,
  OrderFeed,
  type EventPage,
  type FeedSources,
  type OrderPage,
} from './order-feed.js';
export {
  PurchaseService,
  type PurchaseCall,
  type PurchaseDeps,
  type PurchaseOrder,
  type PurchaseOutcome,
} from './purchase.js';
export {
  DEFAULT_SEGMENTS,
  seedRefusal,
  seedRequest,
  seedSpecOf,
  type SeedRequest,
} from './seed-request.js';

export { PollLimit } from './poll-limit.js';
export {
  WaitingRoom,
  type PlaceAnswer,
  type PlaceState,
  type PlaceView,
  type RoomMetricsPort,
} from './waiting-room.js';

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
