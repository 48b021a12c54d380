/**
 * Payment intents: the buyer starts a payment of their order; the intent is bound to that one
 * order (server-minted id, the order's quantity, expiring at its pay_by) and is what the payment
 * provider charges and names back in its signed payment notice. Starting it again answers the same
 * intent. An intent marks nothing paid by itself: only payOrder (payment-window.ts) does, for the
 * provider's verified notice.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { OrderRow, PaymentIntentRow } from '../db/schema.js';

/** `pi_` + 128 random bits: nobody can guess another buyer's intent. */
export const newIntentId = () => `pi_${randomBytes(16).toString('base64url')}`;

export const INTENT_ID = /^pi_[A-Za-z0-9_-]{22}$/;

export type StartOutcome =
  | { code: 'started'; intent: PaymentIntentRow; created: boolean }
  /** no such order, or not this buyer's */
  | { code: 'not-found' }
  /** the order takes no payment now: `order` says what it is (paid, closed, final, past pay_by) */
  | { code: 'conflict'; order: OrderRow };

/**
 * Starts (or answers again) the payment of `orderId` by its buyer: one intent per order, created
 * only while the order awaits payment and its window is open on PostgreSQL's clock.
 */
export async function startPaymentIntent(
  db: Db,
  orderId: string,
  userId: string,
): Promise<StartOutcome> {
  const created = await sql<PaymentIntentRow>`
    insert into payment_intents (id, order_id, user_id, quantity, expires_at, amount, currency)
    select ${newIntentId()}, id, user_id, quantity, pay_by, total_amount, currency from orders
    where id = ${orderId} and user_id = ${userId}
      and status = 'awaiting_payment' and pay_by > now()
    on conflict (order_id) do nothing
    returning *`.execute(db);
  if (created.rows[0]) return { code: 'started', intent: created.rows[0], created: true };
  const found = await sql<OrderRow & { open: boolean }>`
    select *, status = 'awaiting_payment' and pay_by > now() as open from orders
    where id = ${orderId}`.execute(db);
  const order = found.rows[0];
  if (!order || order.user_id !== userId) return { code: 'not-found' };
  const { open, ...row } = order;
  const intent = open
    ? await db
        .selectFrom('payment_intents')
        .selectAll()
        .where('order_id', '=', orderId)
        .executeTakeFirst()
    : undefined;
  return intent
    ? { code: 'started', intent, created: false }
    : { code: 'conflict', order: row as OrderRow };
}

export async function findIntent(db: Db, id: string): Promise<PaymentIntentRow | undefined> {
  return db.selectFrom('payment_intents').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The intent the order's buyer started, if any (one per order). */
export async function intentOfOrder(
  db: Db,
  orderId: string,
): Promise<PaymentIntentRow | undefined> {
  return db
    .selectFrom('payment_intents')
    .selectAll()
    .where('order_id', '=', orderId)
    .executeTakeFirst();
}
