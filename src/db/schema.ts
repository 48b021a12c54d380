import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

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
 * units of cancelled and expired orders go back on sale (restocked_at says when).
 */
export type OrderRowStatus = 'final' | 'awaiting_payment' | 'paid' | 'cancelled' | 'expired';

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

/** A Standard Webhooks delivery by its webhook-id, with the answer it got. */
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

/** The delivery of one order's events to one endpoint, in version order. */
export interface WebhookLanesTable {
  endpoint_id: string;
  order_id: string;
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
  sale_prices: SalePricesTable;
  payment_refusals: PaymentRefusalsTable;
  order_events: OrderEventsTable;
  order_events_pruned: OrderEventsPrunedTable;
  admin_audit: AdminAuditTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_lanes: WebhookLanesTable;
  webhook_relay: WebhookRelayTable;
}

export type OrderRow = Selectable<OrdersTable>;
export type NewOrderRow = Insertable<OrdersTable>;
export type ProductRow = Selectable<ProductsTable>;
export type PaymentIntentRow = Selectable<PaymentIntentsTable>;
