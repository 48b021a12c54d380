/**
 * The order as finance reads it: the payment id wherever the order is shown (GET /orders/:id,
 * the admin listing, the export as NDJSON and CSV), so payouts can be matched; every text cell
 * a spreadsheet would run as a formula (= + - @, a tab, a carriage return, a NUL first) is
 * defused; and a product id that cannot exist is refused (exit 2) instead of answering an
 * empty export.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvCell } from '../../src/cli/orders-export.js';
import { insertOrders } from '../../src/orders/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'export-test-secret-long-enough-0123456789';
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET }), { worker: true });
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

async function exportRun(args: string[]) {
  const run = runCli(['orders', 'export', ...args], {
    DATABASE_URL: ns.databaseUrl,
    REDIS_URL: ns.redisUrl,
    KEY_PREFIX: ns.id,
  });
  return { code: await run.exited, out: run.stdout(), err: run.stderr() };
}

describe('CSV cells', () => {
  it.each([
    ['-2+3', `"'-2+3"`],
    ['=SUM(A1)', `"'=SUM(A1)"`],
    ['+1', `"'+1"`],
    ['@x', `"'@x"`],
    ['\tx', `"'\tx"`],
    ['\rx', `"'\rx"`],
    ['\0x', `"'\0x"`],
    ['-"a",b', `"'-""a"",b"`],
  ])('defuses %j as text', (text, cell) => {
    expect(csvCell(text)).toBe(cell);
  });

  it('leaves other text and numbers as they are (RFC 4180 quoting only)', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a-b')).toBe('a-b');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(undefined)).toBe('');
  });
});

describe('the payment id', () => {
  it('is shown wherever the order is: GET /orders/:id, the admin listing, NDJSON and CSV', async () => {
    const p = newProduct();
    await client.seed(p, {
      total: 3,
      payWithinSeconds: 600,
      price: { amount: 990, currency: 'EUR' },
    });
    const buyer = newUser();
    const o = await client.buy(p, buyer);
    if (!o.ok) throw new Error(o.code);
    const paymentId = `pi_3Finance${p}`;
    const intent = await client.intentOf(o.orderId, buyer);
    const paid = await client.hook({
      type: 'payment.succeeded',
      orderId: o.orderId,
      paymentIntentId: intent.paymentIntentId,
      paymentId,
      amount: 990,
      currency: 'EUR',
    });
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(await paid.json()).toMatchObject({ status: 'paid', paymentId, epoch: 1 });

    expect(await client.orderOf(o.orderId, buyer)).toMatchObject({ status: 'paid', paymentId });
    const listed = await fetch(`${app.url}/admin/orders?product=${p}`, { headers: client.admin });
    expect(((await listed.json()) as { orders: unknown[] }).orders).toEqual([
      expect.objectContaining({ orderId: o.orderId, paymentId }),
    ]);
    const ndjson = await exportRun(['--product', p]);
    expect(ndjson.code, ndjson.err).toBe(0);
    expect(JSON.parse(ndjson.out)).toMatchObject({ orderId: o.orderId, paymentId });
    const csv = await exportRun(['--product', p, '--format', 'csv']);
    const [header, line] = csv.out
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    expect(line![header!.indexOf('paymentId')]).toBe(paymentId);
    expect(line![header!.indexOf('status')]).toBe('paid');
  });
});

describe('seckill orders export', () => {
  it('writes a buyer id that starts a formula as text in the CSV', async () => {
    const p = newProduct();
    await client.seed(p, { total: 10 });
    const users = ['-1+cmd|x', '@SUM(A1)', '+2', 'plain'];
    const rows = users.map((userId, i) => ({
      orderId: `0000${p.slice(1, 5)}-0000-4000-8000-${String(i).padStart(12, '0')}`,
      productId: p,
      epoch: 1,
      userId,
      quantity: 1,
      segment: 0,
      homeSegment: 0,
      outboxId: `${i}-0`,
      deductedAt: Date.now(),
      payWithinSeconds: 0,
    }));
    expect(await insertOrders(app.rt.db, rows as never)).toBe(4);
    const csv = await exportRun(['--product', p, '--format', 'csv']);
    expect(csv.code, csv.err).toBe(0);
    const userCells = csv.out
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split(',')[2]);
    expect(userCells).toEqual([`"'-1+cmd|x"`, `"'@SUM(A1)"`, `"'+2"`, 'plain']);
  });

  it.each([['has space'], ['x'.repeat(129)], ['a/b']])(
    'refuses --product %j, which no product can be (exit 2, nothing written)',
    async (product) => {
      const r = await exportRun(['--product', product, '--format', 'csv']);
      expect(r.code).toBe(2);
      expect(r.err).toContain('--product:');
      expect(r.err).toContain('cannot be a product id');
      expect(r.out).toBe('');
    },
  );
});
