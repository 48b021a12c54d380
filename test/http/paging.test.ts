/**
 * Every paged listing pages the same way (docs/api.md#paging): GET /admin/orders, /admin/events
 * and /admin/audit answer `next`, an opaque cursor passed back as `after`, and a `Link: <...>;
 * rel="next"` header with the next page's URL (the request's filters kept) while there is one.
 * One client loop reads all three, by the header or by `after`; the audit log's `before` (its
 * name in 0.2.0) still works for a release.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertOrders } from '../../src/orders/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { deadlineOf } from '../support/cli.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({}));
});
afterAll(async () => {
  await app?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

interface Page {
  items: unknown[];
  next: string | null;
  link: string | null;
}

/** One page of any listing: its items (whatever the listing calls them), `next` and `Link`. */
async function page(path: string): Promise<Page> {
  const res = await fetch(`${app.url}${path}`, { headers: admin });
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  const body = (await res.json()) as Record<string, unknown> & { next: string | null };
  const [items] = Object.values(body).filter(Array.isArray) as unknown[][];
  const link = res.headers.get('link');
  return { items: items!, next: body.next, link };
}

/** The URL a `Link: <url>; rel="next"` header names. */
function linked(link: string): string {
  const m = /^<([^>]+)>; rel="next"$/.exec(link);
  expect(m, `a Link header with rel="next": ${link}`).not.toBeNull();
  return m![1]!;
}

/**
 * Every page of a listing by following its Link headers, until a page without one or an empty
 * page (a tail's): the item counts of each page, and every page's `next`.
 */
async function followLinks(first: string) {
  const sizes: number[] = [];
  const nexts: Array<string | null> = [];
  let path: string | null = first;
  while (path !== null) {
    const p = await page(path);
    sizes.push(p.items.length);
    nexts.push(p.next);
    // the header and the body agree: the header names `after=<next>`, or is absent with a null next
    if (p.next === null) expect(p.link).toBeNull();
    else expect(new URL(linked(p.link!), app.url).searchParams.get('after')).toBe(p.next);
    path = p.items.length === 0 || p.link === null ? null : linked(p.link);
  }
  return { sizes, nexts };
}

/** Every page of a listing by sending `after=<next>` with the same query: the same pages. */
async function followNext(path: string, query: Record<string, string>) {
  const sizes: number[] = [];
  let after: string | null | undefined;
  const overdue = deadlineOf(`the last page of ${path}`, 50_000);
  for (;;) {
    overdue();
    const q = new URLSearchParams({ ...query, ...(after && { after }) });
    const p = await page(`${path}?${q.toString()}`);
    sizes.push(p.items.length);
    if (p.next === null || p.items.length === 0) return sizes;
    after = p.next;
  }
}

describe('one way to page: GET /admin/orders, /admin/events, /admin/audit', () => {
  it('each answers next as a cursor for after, and a Link to the next page with the filters kept', async () => {
    const productId = `pg${randomBytes(4).toString('hex')}`;
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ strategy: 'segmented', segments: 2, total: 20 }),
    });
    expect(seeded.status).toBe(201);
    // the audit log: a seed and four controls, 5 entries
    for (const action of ['pause', 'resume', 'pause', 'resume']) {
      const res = await fetch(`${app.url}/admin/products/${productId}/${action}`, {
        method: 'POST',
        headers: admin,
      });
      expect(res.status).toBe(200);
    }
    // the events feed from here on: 7 orders, 7 order.created events
    const start = (await page('/admin/events?limit=1000')).next!;
    const rows = Array.from({ length: 7 }, (_, i) => ({
      orderId: `0000${productId.slice(2, 6)}-0000-4000-8000-${String(i).padStart(12, '0')}`,
      productId,
      epoch: 1,
      userId: `u${i}`,
      quantity: 1,
      segment: 0,
      homeSegment: 0,
      outboxId: `${i}-0`,
      deductedAt: Date.now(),
      payWithinSeconds: 0,
    }));
    expect(await insertOrders(app.rt.db, rows as never)).toBe(7);

    const orders = await followLinks(`/admin/orders?product=${productId}&limit=3`);
    expect(orders.sizes).toEqual([3, 3, 1]);
    expect(orders.nexts.at(-1)).toBeNull();
    // the feed shows a transaction's events once no older one is still open (other files' writes
    // on this PostgreSQL may hold that back a moment)
    await waitFor(
      'the 7 order.created events in the feed',
      async () => (await page(`/admin/events?after=${start}&limit=1000`)).items.length === 7,
      10_000,
      50,
    );
    const events = await followLinks(`/admin/events?after=${start}&limit=3`);
    // a tail: the page after the last event is empty, and its next stays where it was
    expect(events.sizes).toEqual([3, 3, 1, 0]);
    expect(events.nexts.at(-1)).toBe(events.nexts.at(-2));
    const audit = await followLinks(`/admin/audit?productId=${productId}&limit=2`);
    expect(audit.sizes).toEqual([2, 2, 1]);
    expect(audit.nexts.at(-1)).toBeNull();

    // the same pages by sending next back as after
    expect(await followNext('/admin/orders', { product: productId, limit: '3' })).toEqual([
      3, 3, 1,
    ]);
    expect(await followNext('/admin/audit', { productId, limit: '2' })).toEqual([2, 2, 1]);

    // the audit log's `before`, its cursor's name in 0.2.0, still pages (for a release)
    const first = await page(`/admin/audit?productId=${productId}&limit=2`);
    const old = await page(`/admin/audit?productId=${productId}&limit=2&before=${first.next!}`);
    const now = await page(`/admin/audit?productId=${productId}&limit=2&after=${first.next!}`);
    expect(old.items).toEqual(now.items);
    expect(old.link).toBe(now.link);
    const both = await fetch(
      `${app.url}/admin/audit?productId=${productId}&after=${first.next!}&before=${first.next!}`,
      { headers: admin },
    );
    expect([both.status, both.headers.get('content-type')]).toEqual([
      400,
      'application/problem+json; charset=utf-8',
    ]);
  });
});
