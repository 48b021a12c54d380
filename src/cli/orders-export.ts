/**
 * `seckill orders export`: every order matching the filters, page after page (GET
 * /admin/orders' keyset pages, read from PostgreSQL directly), streamed to stdout as NDJSON (one
 * order a line, as GET /orders/:id answers it) or CSV (a header line, then one row an order).
 */
import { once } from 'node:events';
import { ID_PATTERN } from '../ids.js';
import { MAX_PAGE, ROW_STATUS, type OrderView } from '../services/index.js';
import { withCore } from './commands.js';
import { ExitError } from './output.js';

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
  'paymentId',
  'epoch',
  'refundedAt',
  'disputedAt',
  'disputeClosedAt',
  'entryId',
  'rank',
] as const;

/** A leading character a spreadsheet reads as the start of a formula (OWASP, CSV injection). */
const FORMULA_START = /^[=+\-@\t\r\0]/;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break. A text starting
 * with = + - @, a tab, a carriage return or a NUL is a live formula once a spreadsheet opens the
 * file: it is prefixed with ' (read as "this is text") and quoted, as OWASP advises. Numbers are
 * written as numbers.
 */
export function csvCell(value: string | number | undefined): string {
  if (value === undefined) return '';
  const text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) {
    return `"'${text.replace(/"/g, '""')}"`;
  }
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
  if (values.product !== undefined && !ID_PATTERN.test(values.product)) {
    problems.push(
      `  --product: ${JSON.stringify(values.product)} cannot be a product id (1-128 of A-Z a-z 0-9 _ . : -)`,
    );
  }
  const status = values.status as keyof typeof ROW_STATUS | undefined;
  if (status !== undefined && !(status in ROW_STATUS)) {
    problems.push(`  --status: one of ${Object.keys(ROW_STATUS).join(', ')}`);
  }
  const since = values['updated-since'];
  if (since !== undefined && Number.isNaN(Date.parse(since))) {
    problems.push('  --updated-since: an ISO 8601 time, e.g. 2030-01-01T10:00:00Z');
  }
  if (problems.length) throw new ExitError(`invalid export:\n${problems.join('\n')}`, 2);
  const filter = {
    productId: values.product,
    status: status && ROW_STATUS[status],
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
