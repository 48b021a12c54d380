import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { createDb, type Db } from '../../src/db/index.js';
import { MIGRATIONS_DIR, MigrationError, migrateToLatest } from '../../src/db/migrate.js';
import { LanesRepository } from '../../src/events/index.js';

const server = inject('postgresServerUrl');
const name = `seckill_mig_${process.pid}`;

async function admin(q: string) {
  const c = new pg.Client({ connectionString: `${server}/postgres` });
  await c.connect();
  await c.query(q).finally(() => c.end());
}

describe('migrations', () => {
  let db: Db;
  beforeAll(async () => {
    await admin(`drop database if exists ${name} with (force)`);
    await admin(`create database ${name}`);
    db = createDb(`${server}/${name}`, { max: 2 });
  });
  afterAll(async () => {
    await db.destroy();
    await admin(`drop database if exists ${name} with (force)`);
  });

  it('migrates an empty database up, then finds nothing left to do', async () => {
    expect(await migrateToLatest(db)).toEqual([
      '20261122_0001_products_and_orders',
      '20261123_0002_payment_window',
      '20261124_0003_payment_intents',
      '20261125_0004_prices',
      '20261126_0005_order_events',
      '20261127_0006_admin_audit',
      '20261128_0007_webhook_endpoints',
      '20261206_0008_order_view',
      '20261206_0009_payment_notices',
      '20261206_0010_refunds_and_disputes',
      '20261206_0011_webhook_lanes_due',
      '20261206_0012_webhook_recovery',
      '20261206_0013_webhook_lanes_owed',
      '20261206_0014_order_events_by_order_version',
      '20261206_0015_product_events',
      '20261206_0016_draws',
      '20261207_0017_order_draw_entry',
    ]);
    expect(await migrateToLatest(db)).toEqual([]);

    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema = 'public'
        and table_name in ('products', 'orders', 'payment_intents', 'payment_notices')
      order by 1`.execute(db);
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      'orders',
      'payment_intents',
      'payment_notices',
      'products',
    ]);

    const indexes = await sql<{ indexname: string; indexdef: string }>`
      select indexname, indexdef from pg_indexes where tablename = 'orders' order by 1`.execute(db);
    const defs = indexes.rows.map((r) => r.indexdef);
    expect(defs).toContainEqual(expect.stringMatching(/UNIQUE INDEX .* \(idempotency_key\)/));
    expect(defs).toContainEqual(
      expect.stringMatching(/INDEX orders_product_user .*\(product_id, user_id\)/),
    );
    // the expiry sweep's index, and one payment id settles one order
    expect(defs).toContainEqual(
      expect.stringMatching(/INDEX orders_status_pay_by .*\(status, pay_by\)/),
    );
    expect(defs).toContainEqual(expect.stringMatching(/UNIQUE INDEX .* \(payment_id\)/));
  });

  it('indexes an order event once, by its order and version: its id, their name, has no index of its own', async () => {
    const indexes = await sql<{ indexdef: string }>`
      select indexdef from pg_indexes where tablename = 'order_events' order by 1`.execute(db);
    const unique = indexes.rows.map((r) => r.indexdef).filter((d) => d.includes('UNIQUE'));
    // every sale writes one event: one random unique key a sale, not two
    expect(unique).toEqual([expect.stringMatching(/\(order_id, version\)$/)]);
    const identity = await sql<{ relreplident: string }>`
      select relreplident from pg_class where relname = 'order_events'`.execute(db);
    expect(identity.rows[0]!.relreplident).toBe('i');
  });

  it('refuses an order awaiting payment without a deadline, and a status it does not know', async () => {
    await db
      .insertInto('products')
      .values({ id: 'p0', total: 1, segments: 1, strategy: 'global', limit_per_user: 1, epoch: 1 })
      .execute();
    const row = (n: number, status: string, payBy: Date | null) => ({
      id: `00000000-0000-7000-8000-00000000010${n}`,
      idempotency_key: `p0:1:${n}`,
      product_id: 'p0',
      epoch: 1,
      user_id: 'u1',
      quantity: 1,
      segment: 0,
      home_segment: 0,
      outbox_id: `${n}-0`,
      deducted_at: new Date(),
      status: status as 'final',
      pay_by: payBy,
    });
    await expect(
      db
        .insertInto('orders')
        .values(row(1, 'awaiting_payment', null))
        .execute(),
    ).rejects.toThrow(/orders_pay_by_when_awaiting/);
    await expect(
      db
        .insertInto('orders')
        .values(row(2, 'shipped', null))
        .execute(),
    ).rejects.toThrow(/orders_status_known/);
    await db
      .insertInto('orders')
      .values(row(3, 'awaiting_payment', new Date()))
      .execute();
    // a payment's life after paid (migration 0010)
    for (const [n, status] of ['refunded', 'disputed', 'dispute_lost'].entries()) {
      await db
        .insertInto('orders')
        .values(row(4 + n, status, null))
        .execute();
    }
    await db.deleteFrom('order_events').execute();
    await db.deleteFrom('orders').execute();
    await db.deleteFrom('products').execute();
  });

  it('enforces the idempotency key: a second insert of the same key is ignored, not duplicated', async () => {
    await db
      .insertInto('products')
      .values({ id: 'p1', total: 1, segments: 1, strategy: 'global', limit_per_user: 1, epoch: 1 })
      .execute();
    const row = {
      id: '00000000-0000-7000-8000-000000000001',
      idempotency_key: 'p1:1:00000000-0000-7000-8000-000000000001',
      product_id: 'p1',
      epoch: 1,
      user_id: 'u1',
      quantity: 1,
      segment: 0,
      home_segment: 0,
      outbox_id: '1-0',
      deducted_at: new Date(),
    };
    for (let i = 0; i < 2; i++) {
      await db
        .insertInto('orders')
        .values(row)
        .onConflict((oc) => oc.column('idempotency_key').doNothing())
        .execute();
    }
    const { count } = await db
      .selectFrom('orders')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .executeTakeFirstOrThrow();
    expect(Number(count)).toBe(1);
  });

  it("0009 carries the previous release's notices over, each under its provider", async () => {
    const before = `${name}_0009`;
    await admin(`drop database if exists ${before} with (force)`);
    await admin(`create database ${before}`);
    const old = createDb(`${server}/${before}`, { max: 2 });
    const dir = mkdtempSync(join(process.cwd(), 'test', '.tmp-'));
    try {
      cpSync(MIGRATIONS_DIR, dir, { recursive: true });
      // the release before: every migration up to 0008
      for (const f of readdirSync(dir)) if (f > '20261206_0009') rmSync(join(dir, f));
      await migrateToLatest(old, dir);
      await old
        .insertInto('webhook_deliveries')
        .values([
          { id: 'stripe:evt_1Old', status: 200, body: JSON.stringify({ status: 'paid' }) },
          { id: 'msg_old', status: 409, body: JSON.stringify({ type: 'x' }) },
          { id: 'msg_open', status: null, body: null },
        ])
        .execute();
      expect(await migrateToLatest(old)).toContain('20261206_0009_payment_notices');
      const notices = await old
        .selectFrom('payment_notices')
        .select(['provider', 'id', 'status'])
        .orderBy('id')
        .execute();
      expect(notices).toEqual([
        { provider: 'stripe', id: 'evt_1Old', status: 200 },
        { provider: 'standard-webhooks', id: 'msg_old', status: 409 },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await old.destroy();
      await admin(`drop database if exists ${before} with (force)`);
    }
  });

  it("0015 keeps the previous release's lanes: an order's lane is the lane of its subject", async () => {
    const before = `${name}_0015`;
    await admin(`drop database if exists ${before} with (force)`);
    await admin(`create database ${before}`);
    const old = createDb(`${server}/${before}`, { max: 2 });
    const dir = mkdtempSync(join(process.cwd(), 'test', '.tmp-'));
    try {
      cpSync(MIGRATIONS_DIR, dir, { recursive: true });
      // the release before: every migration up to 0014
      for (const f of readdirSync(dir)) if (f > '20261206_0015') rmSync(join(dir, f));
      await migrateToLatest(old, dir);
      const orderId = '00000000-0000-7000-8000-0000000001a1';
      await old
        .insertInto('products')
        .values({
          id: 'p14',
          total: 2,
          segments: 1,
          strategy: 'global',
          limit_per_user: 1,
          epoch: 1,
        })
        .execute();
      await old
        .insertInto('orders')
        .values({
          id: orderId,
          idempotency_key: `p14:1:${orderId}`,
          product_id: 'p14',
          epoch: 1,
          user_id: 'u1',
          quantity: 1,
          segment: 0,
          home_segment: 0,
          outbox_id: '1-0',
          deducted_at: new Date(),
        })
        .execute();
      await sql`insert into webhook_endpoints (id, url, types, secret)
        values ('ep_old', 'https://warehouse.example/hooks', '{order.created}', 'whsec_x')`.execute(
        old,
      );
      await sql`insert into webhook_lanes (endpoint_id, order_id, wanted_version, attempts)
        values ('ep_old', ${orderId}::uuid, 1, 2)`.execute(old);

      expect(await migrateToLatest(old)).toEqual([
        '20261206_0015_product_events',
        '20261206_0016_draws',
        '20261207_0017_order_draw_entry',
      ]);
      const lane = await old
        .selectFrom('webhook_lanes')
        .select(['subject', 'wanted_version', 'acked_version', 'attempts'])
        .executeTakeFirstOrThrow();
      expect(lane).toEqual({ subject: orderId, wanted_version: 1, acked_version: 0, attempts: 2 });
      // what a delivery reads of it: the order's event, through the lane's subject
      const [due] = await new LanesRepository(old).dueLanes('ep_old', [orderId], ['order.created']);
      expect(due!.due.map((e) => [e.id, e.subject, e.sequence])).toEqual([
        [`evt_${orderId}_1`, orderId, 1],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await old.destroy();
      await admin(`drop database if exists ${before} with (force)`);
    }
  });

  it('reports a failed migration by name and reason', async () => {
    // The landed migrations plus a broken one (inside the repo, so `kysely` resolves).
    const dir = mkdtempSync(join(process.cwd(), 'test', '.tmp-'));
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    writeFileSync(
      join(dir, '20990101_0001_broken.mjs'),
      "export async function up(db) { await db.schema.alterTable('no_such_table').addColumn('x', 'text').execute(); }\n",
    );
    const err = await migrateToLatest(db, dir).catch((e: unknown) => e);
    rmSync(dir, { recursive: true, force: true });
    expect(err).toBeInstanceOf(MigrationError);
    expect((err as Error).message).toMatch(/"20990101_0001_broken" failed: .*no_such_table/);
  });
});
