import type { Queue } from 'bullmq';
import { sql } from 'kysely';
import type { Config } from '../../src/config/index.js';
import type { Db } from '../../src/db/index.js';
import type { Purchase } from '../../src/inventory/index.js';
import { readProductState, SaleError } from '../../src/inventory/index.js';
import { createLogger } from '../../src/log.js';
import { startOrderQueue, startOrderSubmitter, startOrderWorker } from '../../src/orders/index.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { waitFor } from './cli.js';

export interface StackProcess {
  rt: Runtime;
  queue: Queue;
  submit: (p: Purchase) => void;
  /** buys through the sale and hands the order on, as POST /seckill does; retries 503s */
  buy(productId: string, userId: string, o?: { submit?: boolean }): Promise<string>;
  close(): Promise<void>;
}

/** One process of the product: inventory, order queue + submitter, and optionally a worker. */
export async function stackProcess(
  config: Config,
  o: { worker?: boolean } = {},
): Promise<StackProcess> {
  const rt = createRuntime(config, createLogger(config));
  const queue = startOrderQueue(rt);
  if (o.worker) await startOrderWorker(rt, queue);
  const submit = startOrderSubmitter(rt, queue);
  return {
    rt,
    queue,
    submit,
    async buy(productId, userId, opts = {}) {
      for (;;) {
        try {
          const p = await rt.inventory.sale.purchase({ productId, userId, quantity: 1 });
          if (opts.submit ?? true) submit(p);
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
  const state = await readProductState({ redis: s.rt.redis, keys: s.rt.inventory.keys }, productId);
  return (state?.segments ?? []).reduce((n, seg) => n + seg.pending, 0);
}

export function waitForDrainedOutbox(s: StackProcess, productId: string, timeoutMs = 30_000) {
  return waitFor(
    `outbox of ${productId} drained`,
    async () => (await outboxPending(s, productId)) === 0,
    timeoutMs,
  );
}
