/**
 * Background upkeep never holds up persistence. A sweep is made to hang by construction: the
 * only order it has to expire is row-locked by another transaction (and statements may wait two
 * minutes), so its UPDATE waits on the lock. Meanwhile, with one order-worker slot, every new
 * sale must still reach PostgreSQL: the sweep runs on a worker of its own.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProduct } from '../../src/inventory/index.js';
import { expiryJobId } from '../../src/orders/index.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { orderCount, stackProcess, waitForRows, type StackProcess } from '../support/orders.js';

const ns = useNamespace();
let s: StackProcess;

beforeAll(async () => {
  s = await stackProcess(
    ns.config({
      WORKER_CONCURRENCY: '1',
      SWEEP_INTERVAL_MS: '200',
      SWEEP_MIN_AGE_MS: '100',
      PG_STATEMENT_TIMEOUT_MS: '120000',
      LOG_LEVEL: process.env.DEBUG_LOG ?? 'silent',
    }),
    { worker: true },
  );
});
afterAll(async () => {
  await s?.close();
});

const newProduct = () => `u${randomBytes(4).toString('hex')}`;
const seed = (productId: string, total: number, payWithinSeconds?: number) =>
  seedProduct(
    { redis: s.rt.redis, keys: s.rt.keys, db: s.rt.db, catalogue: s.rt.inventory.catalogue },
    productId,
    {
      total,
      segments: 2,
      strategy: 'lockfree',
      payWithinSeconds,
    },
  );

/** Statements of this database waiting on a lock that touch the orders table. */
async function lockWaits(): Promise<number> {
  const r = await sql<{ n: string }>`
    select count(*) as n from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock' and query ilike '%orders%'`.execute(
    s.rt.db,
  );
  return Number(r.rows[0]!.n);
}

describe('a sweep that cannot finish', () => {
  it('does not hold up persistence: every sale reaches PostgreSQL while it waits', async () => {
    // an order awaiting payment whose expiry only the sweep will do (its job is removed)
    const overdue = newProduct();
    await seed(overdue, 1, 3);
    expect(await s.buy(overdue, 'late')).toBe('accepted');
    await waitForRows(s.rt.db, overdue, 1, 30_000);
    const [row] = await s.rt.db
      .selectFrom('orders')
      .select('id')
      .where('product_id', '=', overdue)
      .execute();
    const jobId = expiryJobId(row!.id);
    await waitFor(
      'its expiry job',
      async () => (await s.queue.getJob(jobId)) !== undefined,
      10_000,
    );
    await s.queue.remove(jobId);
    // another transaction holds the row: the sweep's expiry waits on it
    const holder = new pg.Client(ns.databaseUrl);
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from orders where id = $1 for update', [row!.id]);
      await waitFor(
        'the sweep waiting on the locked row',
        async () => (await lockWaits()) > 0,
        30_000,
      );

      const product = newProduct();
      await seed(product, 40);
      const users = Array.from({ length: 40 }, (_, i) => `b${i}`);
      const sold = await Promise.all(users.map((u) => s.buy(product, u)));
      expect(sold.filter((o) => o === 'accepted')).toHaveLength(40);
      await waitForRows(s.rt.db, product, 40, 30_000);
      expect(await orderCount(s.rt.db, product)).toEqual({ rows: 40, users: 40 });
      // the sweep was still held all along
      expect(await lockWaits()).toBeGreaterThan(0);
    } finally {
      await holder.query('rollback').catch(() => {});
      await holder.end();
    }
    // released, the sweep expires the order
    await waitFor(
      'the overdue order expired by the sweep',
      async () =>
        (
          await s.rt.db
            .selectFrom('orders')
            .select('status')
            .where('id', '=', row!.id)
            .executeTakeFirst()
        )?.status === 'expired',
      30_000,
    );
  });
});
