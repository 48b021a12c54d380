import type { Queue } from 'bullmq';
import { sql } from 'kysely';
import type { Config } from '../../src/config/index.js';
import type { Db } from '../../src/db/index.js';
import { createCore, type Core } from '../../src/composition/core.js';
import { apiServices, startOrderQueue, startOrderWorker } from '../../src/composition/roles.js';
import type { SoldOrder } from '../../src/inventory/index.js';
import { OrderStore, readProductState, SaleError } from '../../src/inventory/index.js';
import { createLogger } from '../../src/log.js';
import { OrdersRepository, reconcile } from '../../src/orders/index.js';
import type { RedisClient } from '../../src/redis/connection.js';
import type { Keys } from '../../src/redis/keys.js';
import { deadlineOf, waitFor } from './cli.js';
import { orderSold } from './sale.js';

export interface StackProcess {
  rt: Core;
  queue: Queue;
  /** hands a sold order to the order queue (what checkout does after the deduct) */
  submit: (p: SoldOrder) => void;
  /**
   * buys through checkout, as POST /seckill does (submit: false = the deduct alone, as if the
   * process died before the hand-off); retries 503s
   */
  buy(productId: string, userId: string, o?: { submit?: boolean }): Promise<string>;
  close(): Promise<void>;
}

/** One process of the product: inventory, order queue + submitter, and optionally a worker. */
export async function stackProcess(
  config: Config,
  o: { worker?: boolean } = {},
): Promise<StackProcess> {
  const rt = createCore(config, createLogger(config));
  const queue = startOrderQueue(rt);
  if (o.worker) await startOrderWorker(rt, queue);
  const { checkout, submitter } = apiServices(rt, queue);
  const submit = (p: SoldOrder) => submitter.add(p);
  return {
    rt,
    queue,
    submit,
    async buy(productId, userId, opts = {}) {
      const overdue = deadlineOf(`a final answer for ${userId}`, 50_000);
      for (;;) {
        overdue();
        try {
          const req = { productId, userId, quantity: 1 };
          await orderSold(
            (opts.submit ?? true) ? checkout.buy(req) : rt.inventory.sale.purchase(req),
          );
          return 'accepted';
        } catch (err) {
          if (!(err instanceof SaleError)) throw err;
          if (err.code !== 'lock-timeout' && err.code !== 'purchase-in-progress') return err.code;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    },
    close: () => rt.lifecycle.close(),
  };
}

export async function orderCount(
  db: Db,
  productId: string,
): Promise<{ rows: number; users: number }> {
  const r = await sql<{ rows: string; users: string }>`
    select count(*) as rows, count(distinct user_id) as users from orders where product_id = ${productId}`.execute(
    db,
  );
  return { rows: Number(r.rows[0]!.rows), users: Number(r.rows[0]!.users) };
}

export function waitForRows(db: Db, productId: string, rows: number, timeoutMs = 60_000) {
  return waitFor(
    `${rows} order rows of ${productId}`,
    async () => (await orderCount(db, productId)).rows >= rows,
    timeoutMs,
  );
}

/** Orders of `productId` still in its segments' outboxes (sold, not yet persisted and cleared). */
export async function outboxPending(s: StackProcess, productId: string): Promise<number> {
  const state = await readProductState({ redis: s.rt.redis, keys: s.rt.keys }, productId);
  return (state?.segments ?? []).reduce((n, seg) => n + seg.pending, 0);
}

export function waitForDrainedOutbox(s: StackProcess, productId: string, timeoutMs = 30_000) {
  return waitFor(
    `outbox of ${productId} drained`,
    async () => (await outboxPending(s, productId)) === 0,
    timeoutMs,
  );
}

/** Reconciles `productId` over these connections (a process's, or a test's own probe). */
export function reconcileOver(
  c: { redis: RedisClient; keys: Keys; db: Db },
  productId: string,
  hooks?: Parameters<typeof reconcile>[2],
): ReturnType<typeof reconcile> {
  return reconcile(
    { store: new OrderStore(c.redis, c.keys), rows: new OrdersRepository(c.db) },
    productId,
    hooks,
  );
}

/** Outbox entries naming `orderId` over the product's `segments` segments: 1 for a sale. */
export async function outboxEntriesOf(
  redis: RedisClient,
  keys: Keys,
  order: { productId: string; segments: number; orderId: string },
): Promise<number> {
  let n = 0;
  for (let i = 0; i < order.segments; i++) {
    const entries = await redis.xrange(keys.segment(order.productId, i).outbox, '-', '+');
    n += entries.filter(([, fields]) => fields.includes(order.orderId)).length;
  }
  return n;
}
