/**
 * `seckill orders export` as finance opens it: every text cell a spreadsheet would run as a
 * formula (= + - @, a tab, a carriage return, a NUL first) is defused, and a product id that
 * cannot exist is refused (exit 2) instead of answering an empty export.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvCell } from '../../src/cli/orders-export.js';
import { insertOrders } from '../../src/orders/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, paymentClient } from '../support/payments.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({}));
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, 'unused-secret-long-enough-0123456789', ns.adminToken);

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
