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
}

/** A Standard Webhooks delivery by its webhook-id, with the answer it got. */
export interface WebhookDeliveriesTable {
  id: string;
  status: number | null;
  body: unknown;
  received_at: Generated<Date>;
}

/** The typed view of PostgreSQL every repository function takes first. */
export interface Database {
  products: ProductsTable;
  orders: OrdersTable;
  payment_intents: PaymentIntentsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

export type OrderRow = Selectable<OrdersTable>;
export type NewOrderRow = Insertable<OrdersTable>;
export type ProductRow = Selectable<ProductsTable>;
export type PaymentIntentRow = Selectable<PaymentIntentsTable>;
