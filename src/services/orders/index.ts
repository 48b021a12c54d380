/** Orders and payments: reading an order, paying or cancelling it, and the feeds of orders. */
export { OrderLookup, type OrderReader } from './lookup.js';
export { ROW_STATUS, rowView, type OrderStatus, type OrderView } from './order-view.js';
export {
  Payments,
  type ConflictState,
  type IntentView,
  type PaymentOutcome,
  type StartPaymentOutcome,
} from './payments.js';
export { MAX_PAGE, OrderFeed, type EventPage, type FeedSources, type OrderPage } from './feed.js';
export { priceSchema } from './money.js';
export {
  NOTICE_SOURCES,
  NoticeWork,
  PaymentNotices,
  REFUSAL_REASONS,
  refusalOf,
  type AfterPaidAnswer,
  type NoticeMetrics,
  type NoticeSource,
  type Refusal,
} from './payment-notices.js';
export {
  StripeNotices,
  type StripeEvent,
  type StripeObject,
  type StripeOutcome,
} from './stripe-notices.js';
