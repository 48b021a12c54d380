/**
 * `seckill orders export`: every order matching the filters, page after page (GET
 * /admin/orders' keyset pages, read from PostgreSQL directly), streamed to stdout as NDJSON (one
 * order a line, as GET /orders/:id answers it) or CSV (a header line, then one row an order).
 */
import { once } from 'node:events';
import { MAX_PAGE, type OrderView } from '../services/index.js';
import { withCore } from './commands.js';
import { ExitError } from './output.js';

const STATUS = {
  persisted: 'final',
  awaiting_payment: 'awaiting_payment',
  paid: 'paid',
  cancelled: 'cancelled',
  expired: 'expired',
} as const;

export const CSV_COLUMNS = [
  'orderId',
  'productId',
  'userId',
  'quantity',
  'status',
  'version',
  'unitAmount',
  'currency',
  'totalAmount',
  'deductedAt',
  'persistedAt',
  'updatedAt',
  'payBy',
  'closedAt',
  'restockedAt',
] as const;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break; a text starting
 * with = + @ or a tab is prefixed with ' so a spreadsheet does not run it as a formula.
 */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvRow(order: OrderView): string {
  const cells: Partial<Record<(typeof CSV_COLUMNS)[number], string | number>> = {
    ...order,
    unitAmount: order.price?.amount,
    currency: order.price?.currency,
    totalAmount: order.total?.amount,
  };
  return CSV_COLUMNS.map((c) => csvCell(cells[c])).join(',');
}

interface ExportValues {
  product?: string;
  status?: string;
  'updated-since'?: string;
  format?: string;
}

export async function exportOrders(action: string, values: ExportValues): Promise<void> {
  if (action !== 'export') throw new ExitError(`orders: unknown action "${action}" (export)`, 2);
  const format = values.format ?? 'ndjson';
  const problems: string[] = [];
  if (format !== 'ndjson' && format !== 'csv') problems.push('  --format: ndjson or csv');
  const status = values.status as keyof typeof STATUS | undefined;
  if (status !== undefined && !(status in STATUS)) {
    problems.push(`  --status: one of ${Object.keys(STATUS).join(', ')}`);
  }
  const since = values['updated-since'];
  if (since !== undefined && Number.isNaN(Date.parse(since))) {
    problems.push('  --updated-since: an ISO 8601 time, e.g. 2030-01-01T10:00:00Z');
  }
  if (problems.length) throw new ExitError(`invalid export:\n${problems.join('\n')}`, 2);
  const filter = {
    productId: values.product,
    status: status && STATUS[status],
    updatedSince: since === undefined ? undefined : new Date(since),
  };
  await withCore(['postgres'], async (core) => {
    const write = async (line: string) => {
      if (!process.stdout.write(`${line}\n`)) await once(process.stdout, 'drain');
    };
    if (format === 'csv') await write(CSV_COLUMNS.join(','));
    for await (const order of core.feed.allOrders(filter, MAX_PAGE)) {
      await write(format === 'csv' ? csvRow(order) : JSON.stringify(order));
    }
  });
}
