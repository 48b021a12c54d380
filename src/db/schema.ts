import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type {
  DrawEntriesTable,
  DrawRanksTable,
  DrawRemovedTable,
  DrawSettingsTable,
  DrawsTable,
} from './draw-tables.js';

export type Strategy = 'global' | 'segmented' | 'lockfree';

export interface ProductsTable {
  id: string;
  total: number;
  segments: number;
  strategy: Strategy;
  limit_per_user: number;
  starts_at: Date | null;
  ends_at: Date | null;
  epoch: number;
  /** buyers have this long to pay; null: every sale is final */
  pay_within_seconds: number | null;
  created_at: Generated<Date>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

/**
 * final: a sale without a payment window. awaiting_payment -> paid | cancelled | expired; the
 * units of cancelled and expired orders go back on sale (restocked_at says when). After paid:
 * refunded (its units back while the sale runs, kept sold after its end: units_kept_at), or
 * disputed -> paid (won) | dispute_lost.
 */
export type OrderRowStatus =
  | 'final'
  | 'awaiting_payment'
  | 'paid'
  | 'cancelled'
  | 'expired'
  | 'refunded'
  | 'disputed'
  | 'dispute_lost';

export interface OrdersTable {
  id: string;
  idempotency_key: string;
  product_id: string;
  epoch: number;
  user_id: string;
  quantity: number;
  segment: number;
  home_segment: number;
  outbox_id: string;
  deducted_at: Date;
  persisted_at: Generated<Date>;
  status: ColumnType<OrderRowStatus, OrderRowStatus | undefined, OrderRowStatus>;
  pay_by: Date | null;
  payment_id: string | null;
  closed_at: Date | null;
  restocked_at: Date | null;
  /** the sale's unit price when it was sold (minor units; int8, read as a string), or null */
  unit_amount: ColumnType<string | null, number | null | undefined, never>;
  /** ISO 4217, with unit_amount */
  currency: ColumnType<string | null, string | null | undefined, never>;
  /** unit_amount * quantity */
  total_amount: ColumnType<string | null, number | null | undefined, never>;
  /** 1 when inserted, +1 by each change of state (the order_events triggers) */
  version: Generated<number>;
  /** the last change of state (set by the same trigger) */
  updated_at: Generated<Date>;
  /** refunded: when */
  refunded_at: ColumnType<Date | null, never, Date | null>;
  /** a refund after the sale's end: when its units were kept sold rather than returned */
  units_kept_at: ColumnType<Date | null, never, Date | null>;
  /** the provider's id of the dispute opened on its payment (Stripe's dp_...) */
  dispute_id: ColumnType<string | null, never, string | null>;
  disputed_at: ColumnType<Date | null, never, Date | null>;
  /** the dispute was won (paid again) or lost (dispute_lost) */
  dispute_closed_at: ColumnType<Date | null, never, Date | null>;
  /** bought with a draw's purchase right: the shopper's entry in the frozen list, and its rank */
  draw_entry_id: ColumnType<string | null, never, never>;
  draw_rank: ColumnType<number | null, never, never>;
}

/**
 * An order's change of state, written by triggers on `orders` in the statement that made it
 * (migrations/20261126_0005_order_events.ts).
 */
export interface OrderEventsTable {
  /** evt_<order id>_<version>: the same on every delivery and in the feed */
  id: string;
  /** order within a transaction (int8, read as a string) */
  position: Generated<string>;
  /** the writing transaction's id (int8, read as a string): the feed's order */
  txid: Generated<string>;
  order_id: string;
  version: number;
  type: string;
  occurred_at: Generated<Date>;
  /** the order at this version */
  data: unknown;
}

/**
 * An event of a product that is not an order's (a draw's, a waiting room's), published by
 * application code (src/events/feed/product-events.ts; migrations/20261206_0015_product_events.ts).
 */
export interface ProductEventsTable {
  /** the producer's id, `<type>:...`: publishing it again is a no-op */
  id: string;
  /** its place in the transaction, from the order events' sequence (int8, read as a string) */
  position: Generated<string>;
  /** the writing transaction's id (int8, read as a string): the feed's order */
  txid: Generated<string>;
  product_id: string;
  /** the CloudEvents source: its family, e.g. /seckill/draws */
  source: string;
  /** the producer's; never a uuid (an order's) */
  subject: string;
  /** 1, 2, 3... per subject, in commit order */
  sequence: number;
  type: string;
  occurred_at: Generated<Date>;
  data: unknown;
}

/** The last sequence number given to each subject of product events. */
export interface ProductEventSubjectsTable {
  subject: string;
  sequence: number;
}

/** The feed's pruning mark: the newest (txid, position) deleted. */
export interface OrderEventsPrunedTable {
  id: number;
  txid: ColumnType<string, number | string, number | string>;
  position: ColumnType<string, number | string, number | string>;
}

/** A sale epoch's price, written before the epoch's stock: the orders of the epoch copy it. */
export interface SalePricesTable {
  product_id: string;
  epoch: number;
  /** minor units (int8, read as a string) */
  unit_amount: ColumnType<string, number, number>;
  currency: string;
  created_at: Generated<Date>;
}

/** A provider's notice refused for what it paid (amount or currency): a refund to make. */
export interface PaymentRefusalsTable {
  id: Generated<string>;
  order_id: string;
  payment_id: string;
  reason: string;
  amount: ColumnType<string | null, number | null, never>;
  currency: string | null;
  expected_amount: ColumnType<string | null, number | null, never>;
  expected_currency: string | null;
  received_at: Generated<Date>;
  /** who sent the notice ('stripe', 'standard-webhooks', 'seckill-signature') and its id */
  provider: string | null;
  notice_id: string | null;
  /** why, in words (the answer's detail) */
  detail: string | null;
}

/** A payment the buyer started: bound to one order; only the provider's webhook settles it. */
export interface PaymentIntentsTable {
  id: string;
  order_id: string;
  user_id: string;
  quantity: number;
  /** the order's pay_by */
  expires_at: Date;
  created_at: Generated<Date>;
  /** the order's total (minor units, read as a string) and currency; null when unpriced */
  amount: ColumnType<string | null, number | null | undefined, never>;
  currency: ColumnType<string | null, string | null | undefined, never>;
}

/** An operator's change to a sale: who, when, what was asked and how it ended. */
export interface AdminAuditTable {
  /** bigserial, read as a string */
  id: Generated<string>;
  at: Generated<Date>;
  via: 'token' | 'session' | 'cli';
  session: string | null;
  operator: string | null;
  address: string | null;
  action: string;
  product_id: string | null;
  epoch: ColumnType<number | null, number | null | undefined, number | null>;
  request: ColumnType<unknown, string, never>;
  outcome: ColumnType<AuditOutcome, AuditOutcome | undefined, AuditOutcome>;
  result: ColumnType<unknown, never, string>;
  finished_at: ColumnType<Date | null, never, Date>;
}

export type AuditOutcome = 'started' | 'done' | 'refused' | 'failed';

/**
 * A payment notice by its provider and id, with the answer it got (the previous release's
 * `webhook_deliveries`, one key for both, is left to its processes until a later release drops it).
 */
export interface PaymentNoticesTable {
  provider: 'stripe' | 'standard-webhooks';
  id: string;
  status: number | null;
  body: unknown;
  received_at: Generated<Date>;
}

/** The previous release's notices, one key for both providers (payment_notices replaces it). */
export interface WebhookDeliveriesTable {
  id: string;
  status: number | null;
  body: unknown;
  received_at: Generated<Date>;
}

/** A receiver of order events (docs/events.md#webhooks). */
export interface WebhookEndpointsTable {
  id: string;
  url: string;
  types: string[];
  /** whsec_...: signs every delivery */
  secret: string;
  /** the secret before the last rotation: deliveries are signed with it too until then */
  previous_secret: ColumnType<string | null, string | null | undefined, unknown>;
  previous_secret_until: ColumnType<Date | null, Date | null | undefined, unknown>;
  status: ColumnType<'active' | 'disabled', 'active' | 'disabled' | undefined>;
  disabled_reason: ColumnType<string | null, string | null | undefined>;
  disabled_at: ColumnType<Date | null, Date | null | undefined, unknown>;
  created_at: Generated<Date>;
  /** its attempts have found it down (no answer, 502, 503, 504) since then, nothing acknowledged */
  failing_since: ColumnType<Date | null, Date | null | undefined>;
  /** when one of its lanes was last brought forward to find out whether it is back */
  probed_at: ColumnType<Date | null, Date | null | undefined>;
}

/**
 * The delivery of one subject's events (an order's, or a product event's subject) to one
 * endpoint, in version (sequence) order.
 */
export interface WebhookLanesTable {
  endpoint_id: string;
  /** an order id (its text), or a product event's subject */
  subject: string;
  /** the newest version the relay handed on */
  wanted_version: number;
  /** the newest version the receiver acknowledged */
  acked_version: Generated<number>;
  /** when the oldest event not yet acknowledged was committed; null when none is pending */
  pending_since: Date | null;
  /** failed attempts of the event now being delivered */
  attempts: Generated<number>;
  last_error: string | null;
  /** when it is tried next (its own job then): its schedule's time, or brought forward */
  next_attempt_at: Date | null;
  /** when the retry schedule tries it next; an earlier attempt that fails is not counted */
  scheduled_at: ColumnType<Date | null, Date | null | undefined>;
  /** the receiver's Retry-After: not tried before it */
  not_before: ColumnType<Date | null, Date | null | undefined>;
  enqueued_at: Generated<Date>;
  /** dead-lettered from this version on (the last retry failed); null while live */
  dead_version: number | null;
  dead_at: Date | null;
}

/** How far in the feed the relay handed events on. */
export interface WebhookRelayTable {
  id: number;
  txid: ColumnType<string, number | string, number | string>;
  position: ColumnType<string, number | string, number | string>;
}

/** The typed view of PostgreSQL every repository function takes first. */
export interface Database {
  products: ProductsTable;
  orders: OrdersTable;
  payment_intents: PaymentIntentsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  payment_notices: PaymentNoticesTable;
  sale_prices: SalePricesTable;
  payment_refusals: PaymentRefusalsTable;
  order_events: OrderEventsTable;
  order_events_pruned: OrderEventsPrunedTable;
  product_events: ProductEventsTable;
  product_event_subjects: ProductEventSubjectsTable;
  admin_audit: AdminAuditTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_lanes: WebhookLanesTable;
  webhook_relay: WebhookRelayTable;
  draw_settings: DrawSettingsTable;
  draws: DrawsTable;
  draw_entries: DrawEntriesTable;
  draw_removed: DrawRemovedTable;
  draw_ranks: DrawRanksTable;
}

export type OrderRow = Selectable<OrdersTable>;
export type NewOrderRow = Insertable<OrdersTable>;
export type ProductRow = Selectable<ProductsTable>;
export type PaymentIntentRow = Selectable<PaymentIntentsTable>;
