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
  created_at: Generated<Date>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

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
}

/** The typed view of PostgreSQL every repository function takes first. */
export interface Database {
  products: ProductsTable;
  orders: OrdersTable;
}

export type OrderRow = Selectable<OrdersTable>;
export type NewOrderRow = Insertable<OrdersTable>;
export type ProductRow = Selectable<ProductsTable>;
