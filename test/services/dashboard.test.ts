/**
 * The live dashboard in a real headless Chromium (Debian's `chromium`, driven by playwright-core):
 * log in with the admin token (never in a URL), see exactly each segment's remaining stock and
 * the sold count after real purchases, and a wrong token gets no data; a 1,024-segment sale on
 * one screen during the sale and after its sell-out, refusals counted by kind. Also the stream's
 * own contract (admin only, it ends when the viewer goes away) and the feed's sliding window.
 */
import { copyFileSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queue } from 'bullmq';
import { DashboardRepository } from '../../src/db/dashboard-repository.js';
import { createRegistry, httpMetrics, metricsText } from '../../src/metrics.js';
import { registerOrderGauges } from '../../src/orders/index.js';
import { ProductStore } from '../../src/inventory/index.js';
import { DashboardFeed } from '../../src/services/index.js';
import { REFUSAL_KINDS } from '../../src/services/dashboard/rates.js';
import { HISTORY_MS, type DashboardHistory } from '../../src/services/dashboard/feed.js';
import { startApp, type RunningApp } from '../support/app.js';
import {
  cellTitle,
  cellTitles,
  expectShows,
  fmt,
  logIn,
  text,
  took,
  totals,
  type AdminProduct,
} from '../support/dashboard.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { useNamespace } from '../support/namespace.js';
import { seedSale } from '../support/factories.js';

sayIfNoBrowser('dashboard.test');

const ns = useNamespace();
let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  // TRUST_PROXY: the throttled login below comes from an address of its own (X-Forwarded-For);
  // RATE_LIMIT_USER: a shopper's third request is a 429 (every other shopper here sends one)
  app = await startApp(
    ns.config({ TRUST_PROXY: 'true', ADMIN_GUESS_LIMIT: '5/m', RATE_LIMIT_USER: '2/m' }),
    { worker: true },
  );
  if (CHROMIUM) {
    browser = await launchBrowser();
  }
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

async function adminProduct(productId: string): Promise<AdminProduct> {
  const res = await fetch(`${app.url}/admin/products/${productId}`, { headers: admin });
  expect(res.status).toBe(200);
  return (await res.json()) as AdminProduct;
}

const seed = (productId: string, body: Record<string, unknown>) =>
  seedSale(app.url, productId, body);

/** POST /seckill as `user`: the status and, for a refusal, its problem code. */
async function buy(productId: string, user: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user },
    body: JSON.stringify({ productId }),
  });
  const body = (await res.json()) as { type?: string };
  if (res.status === 202) return { status: 202 };
  return { status: res.status, code: body.type?.replace('urn:seckill:problem:', '') };
}

/** The stream's first event: the charts' recent past (read as a script would, by bearer). */
async function streamHistory(): Promise<DashboardHistory> {
  const controller = new AbortController();
  const res = await fetch(`${app.url}/admin/dashboard/stream`, {
    headers: { authorization: `Bearer ${ns.adminToken}` },
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  let text = '';
  while (!/^data: \{"at"/m.test(text)) {
    text += new TextDecoder().decode((await reader.read()).value);
  }
  controller.abort();
  const [, data] = /^event: history\ndata: (.+)$/m.exec(text) ?? [];
  // the history comes before the first snapshot
  expect(text.indexOf('event: history')).toBeLessThan(text.search(/^data: \{"at"/m));
  return JSON.parse(data!) as DashboardHistory;
}

async function seedAndBuy(productId: string, buyers: number) {
  const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ total: 40, strategy: 'segmented', segments: 4 }),
  });
  expect(seeded.status).toBe(201);
  let accepted = 0;
  for (let i = 0; i < buyers; i++) {
    const res = await fetch(`${app.url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': `dash-${productId}-${i}` },
      body: JSON.stringify({ productId }),
    });
    if (res.status === 202) accepted++;
  }
  return accepted;
}

describe('the stream', () => {
  it('is admin only: no session gets 401, a wrong token 403, no data', async () => {
    expect((await fetch(`${app.url}/admin/dashboard/stream`)).status).toBe(401);
    const wrong = await fetch(`${app.url}/admin/dashboard/stream`, {
      headers: { authorization: 'Bearer wrong-token-wrong-token' },
    });
    expect(wrong.status).toBe(403);
    expect(wrong.headers.get('content-type')).toMatch(/problem\+json/);
    for (const cookie of [
      `seckill_dashboard=v1.${Date.now() + 60_000}.AAAA`,
      `seckill_admin=v2.${'A'.repeat(22)}.${Date.now() + 60_000}.${'A'.repeat(43)}`,
    ]) {
      const forged = await fetch(`${app.url}/admin/dashboard/stream`, { headers: { cookie } });
      expect(forged.status).toBe(401);
    }
    const login = await fetch(`${app.url}/admin/dashboard/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 'wrong-token' }),
    });
    expect(login.status).toBe(401);
    expect(login.headers.get('set-cookie')).toBeNull();
  });

  it('sends snapshots about twice a second, and stops when the viewer goes away', async () => {
    const controller = new AbortController();
    const res = await fetch(`${app.url}/admin/dashboard/stream`, {
      headers: { authorization: `Bearer ${ns.adminToken}` },
      signal: controller.signal,
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/^data: \{"at"/gm) ?? []).length < 3) {
      text += new TextDecoder().decode((await reader.read()).value);
    }
    const snapshots = text
      .split('\n')
      .filter((l) => l.startsWith('data: {"at"'))
      .map((l) => JSON.parse(l.slice(6)) as { at: number });
    // paced by the server, whatever this machine's speed: the first at once, then every 500 ms
    // (each snapshot says when it was taken)
    expect(snapshots[2]!.at - snapshots[0]!.at).toBeGreaterThanOrEqual(900);
    const snapshot = snapshots[0];
    expect(snapshot).toHaveProperty('rates.accepted');
    const viewers = async () =>
      /^seckill_dashboard_viewers (\d+)$/m.exec(
        await (await fetch(`${app.url}/metrics`)).text(),
      )?.[1];
    expect(await viewers()).toBe('1');
    controller.abort();
    // the server lets go of it: no viewer left (and the feed stops polling)
    await expect.poll(viewers, { timeout: 5_000 }).toBe('0');
  });
});

describe('the feed', () => {
  it('keeps the last 2 minutes of rates while nobody watches, and nothing older', async () => {
    let now = 1_700_000_000_000;
    let accepted = 0;
    const feed = new DashboardFeed({
      source: {
        productStates: () => Promise.reject(new Error('a sample reads the counters only')),
        orderGroups: () => Promise.reject(new Error('a sample reads the counters only')),
      },
      metricsText: async () =>
        `http_requests_total{method="POST",route="/seckill",status="202"} ${accepted}\n`,
      clock: () => now,
      windowMs: 10_000,
    });
    expect(feed.history()).toEqual({ spanMs: HISTORY_MS, points: [] });
    // 160 s with nobody watching: a sample every 2 s, 10 purchases between samples (5/s)
    for (let i = 0; i <= 80; i++) {
      await feed.sample();
      accepted += 10;
      now += 2_000;
    }
    const last = now - 2_000;
    const { points } = feed.history();
    expect(points.length).toBe(61); // 120 s of 2 s steps, both ends in
    expect(points[0]!.at).toBe(last - HISTORY_MS);
    expect(points.at(-1)).toMatchObject({ at: last, accepted: 5, refusals: { soldOut: 0 } });
    expect(points.every((p) => p.accepted === 5)).toBe(true);
  });

  it('an idle sample collects the request counters only: no gauge reads a product (issue 46)', async () => {
    const registry = createRegistry();
    const http = httpMetrics(registry);
    let productReads = 0;
    registerOrderGauges({
      registry,
      queue: { getJobCounts: async () => ({}) } as unknown as Queue,
      products: {
        states: async () => {
          productReads++;
          return [];
        },
      },
    });
    let now = 1_700_000_000_000;
    const feed = new DashboardFeed({
      source: {
        productStates: () => Promise.reject(new Error('a sample reads the counters only')),
        orderGroups: () => Promise.reject(new Error('a sample reads the counters only')),
      },
      metricsText: (names) => metricsText(registry, names),
      clock: () => now,
    });
    await feed.sample();
    for (let i = 0; i < 6; i++) http.observe('POST', '/seckill', 202, 0.001);
    now += 2_000;
    await feed.sample();
    expect(productReads).toBe(0);
    expect(feed.history().points.at(-1)).toMatchObject({ at: now, accepted: 3 });
    // what /metrics serves still reads them (the gauges are there, and collected there)
    expect(await metricsText(registry)).toContain('seckill_queue_jobs');
    expect(productReads).toBe(1);
  });

  it('keeps a burst in its rates for the whole window, not only the tick after it', async () => {
    let now = Date.now();
    let accepted = 0;
    const products = new ProductStore({ redis: app.rt.redis, keys: app.rt.keys, db: app.rt.db });
    const orderRows = new DashboardRepository(app.rt.db);
    const feed = new DashboardFeed({
      source: {
        productStates: (max) => products.states(max),
        orderGroups: (ids) => orderRows.orderGroups(ids),
      },
      // the merged /metrics of the API processes, as text
      metricsText: async () =>
        `http_requests_total{method="POST",route="/seckill",status="202"} ${accepted}\n` +
        `http_problems_total{route="/seckill",code="sold-out"} ${accepted * 2}\n`,
      clock: () => now,
      windowMs: 10_000,
    });
    const after = async (ms: number) => {
      now += ms;
      return (await feed.snapshot()).rates;
    };
    expect((await after(0)).accepted).toBe(0);
    accepted = 500; // a burst, then nothing
    expect(await after(500)).toMatchObject({ accepted: 1_000, refusals: { soldOut: 2_000 } });
    // a rate over the last tick read 0 from here on; the window still holds the burst
    expect((await after(500)).accepted).toBe(500);
    expect((await after(4_000)).accepted).toBe(100);
    expect(await after(5_000)).toMatchObject({ seconds: 10, accepted: 50 });
    expect(await after(500)).toMatchObject({ accepted: 0, refused: 0 }); // out of the window
  });
});

describe.skipIf(!CHROMIUM)('the page in headless Chromium', () => {
  it("after a login, shows exactly each segment's stock and the sold count; a wrong token shows no data", async () => {
    const productId = `dash${Date.now().toString(36)}`;
    const accepted = await seedAndBuy(productId, 13);
    expect(accepted).toBe(13);
    const state = await adminProduct(productId);

    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // a wrong token: the login form says so, and no data is shown
      await page.goto(`${app.url}/admin/dashboard`);
      await page.fill('#token', 'not-the-admin-token');
      await page.click('button[type=submit]');
      await expect
        .poll(() => page.textContent('[data-testid=login-error]'))
        .toBe('Wrong admin token');
      expect(await page.locator(`[data-testid=remaining-${productId}]`).count()).toBe(0);
      expect(page.url()).not.toContain(ns.adminToken);

      await page.fill('#token', ns.adminToken);
      await page.click('button[type=submit]');
      await page.waitForSelector(`[data-testid=remaining-${productId}]`, { timeout: 15_000 });
      expect(page.url()).toBe(`${app.url}/admin/dashboard`);
      const cookie = (await context.cookies()).find((c) => c.name === 'seckill_admin')!;
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin' });

      expect(state).toMatchObject({ remaining: 27, sold: 13 });
      // each segment's exact stock, in its heat-map cell's title
      await expectShows(page, productId, state);
      // live: a purchase now shows up without a reload
      await fetch(`${app.url}/seckill`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-id': `dash-late-${productId}` },
        body: JSON.stringify({ productId }),
      });
      await expect
        .poll(() => page.textContent(`[data-testid=remaining-${productId}]`), { timeout: 5_000 })
        .toBe('26');
      await expect
        .poll(() => page.textContent('[data-testid=persisted]'), { timeout: 10_000 })
        .not.toBe('–');
      // webhook orders pending / dead-lettered (no endpoint registered here)
      expect(await page.textContent('[data-testid=webhooks]')).toBe('0 / 0');
      // the tile's "Retry now" asks the admin API with the session: nothing waits here
      await page.click('[data-testid=webhooks-retry]');
      await expect
        .poll(() => page.textContent('[data-testid=webhooks-retry-status]'), { timeout: 5_000 })
        .toBe('nothing waits');
    } finally {
      await context.close();
    }
  });

  it('the same session opens Bull Board, asking no other host; after a logout neither opens', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const hosts = new Set<string>();
    page.on('request', (r) => hosts.add(new URL(r.url()).host));
    try {
      await page.goto(`${app.url}/admin/queues`);
      expect(await page.textContent('body')).toContain('Authentication required');
      await page.goto(`${app.url}/admin/dashboard`);
      await page.fill('#token', ns.adminToken);
      await page.click('button[type=submit]');
      await page.waitForSelector('#logout', { timeout: 15_000 });
      await page.goto(`${app.url}/admin/queues`);
      // Bull Board's own page renders the order queue
      await page.getByText('orders', { exact: true }).first().waitFor({ timeout: 15_000 });
      expect(page.url()).toContain('/admin/queues');
      // no font host (fonts.googleapis.com was asked on every visit): offline and private
      expect([...hosts]).toEqual([new URL(app.url).host]);
      const html = await (await page.request.get(`${app.url}/admin/queues`)).text();
      expect(html).not.toMatch(/https?:\/\/(?!localhost|127\.0\.0\.1)[\w.-]+\.[a-z]{2,}\//);

      await page.goto(`${app.url}/admin/dashboard`);
      await page.click('#logout');
      await page.waitForSelector('#login', { timeout: 15_000 });
      const after = await page.goto(`${app.url}/admin/queues`);
      expect(after!.status()).toBe(401);
    } finally {
      await context.close();
    }
  });

  it('the login form shows answers other than a wrong token as what they are (400, 429)', async () => {
    // an address of its own, so its wrong tokens throttle nobody else
    const context = await browser!.newContext({
      extraHTTPHeaders: { 'x-forwarded-for': '198.51.100.77' },
    });
    const page = await context.newPage();
    const error = () => page.textContent('[data-testid=login-error]');
    try {
      await page.goto(`${app.url}/admin/dashboard`);
      await page.fill('#token', 'x'.repeat(600));
      await page.click('button[type=submit]');
      await expect.poll(error).toMatch(/^400 Invalid login/);
      // ADMIN_GUESS_LIMIT 5/m (the other tests' few wrong tokens come from 127.0.0.1)
      for (let i = 0; i < 5; i++) {
        await page.fill('#token', `wrong-${i}`);
        await page.click('button[type=submit]');
        await expect.poll(error).toBe('Wrong admin token');
        await page.fill('#token', '');
      }
      // one more wrong token (the right one has a bucket of its own prefix)
      await page.fill('#token', 'wrong-again');
      await page.click('button[type=submit]');
      await expect.poll(error).toMatch(/^429 Too many wrong admin tokens: .*\(retry in \d+ s\)$/);
      expect(await page.locator('#logout').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it(
    'a 1,024-segment sale fits one screen, during the sale and after its sell-out: exact figures, refusals by kind, upcoming counted down, ended folded',
    { timeout: 300_000 },
    async () => {
      const t = Date.now().toString(36);
      const [big, soon, past] = [`heat${t}`, `soon${t}`, `past${t}`];
      const hour = 3_600_000;
      const iso = (ms: number) => new Date(Date.now() + ms).toISOString();
      await seed(big, { total: 1_536, strategy: 'segmented', segments: 1_024 });
      const soonStartsAt = Date.now() + hour;
      await seed(soon, {
        total: 1_234_567,
        strategy: 'segmented',
        segments: 8,
        startsAt: new Date(soonStartsAt).toISOString(),
      });
      const window = { startsAt: iso(-2 * hour), endsAt: iso(-hour) };
      await seed(past, { total: 40, strategy: 'segmented', segments: 4, ...window });

      const shots = mkdtempSync(join(tmpdir(), 'seckill-dashboard-'));
      process.stderr.write(`[dashboard.test] screenshots in ${shots}\n`);
      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      // every answer of this test by kind, as the page should count them
      const got: Record<string, number> = {};
      const count = (r: { status: number; code?: string }) => {
        const kind =
          r.status === 202
            ? 'accepted'
            : (REFUSAL_KINDS.find((k) => (k.codes as readonly string[]).includes(r.code ?? ''))
                ?.kind ?? 'other');
        got[kind] = (got[kind] ?? 0) + 1;
        return r;
      };
      /** new shoppers, 8 at a time, until `done` */
      const shoppers = async (prefix: string, done: () => boolean) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            while (!done()) count(await buy(big, `${prefix}-${next++}`));
          }),
        );
      };
      const shown = async (before: Record<string, number>) => {
        const now = await totals(page);
        return Object.fromEntries(Object.keys(before).map((k) => [k, now[k]! - before[k]!]));
      };
      const expected = (before: Record<string, number>) =>
        Object.fromEntries(Object.keys(before).map((k) => [k, got[k] ?? 0]));
      try {
        await logIn(page, app.url, ns.adminToken);
        const before = await totals(page);
        expect(Object.keys(before).sort()).toEqual(
          ['accepted', ...REFUSAL_KINDS.map((k) => k.kind)].sort(),
        );

        // during the sale: about half sold (1 or 2 units a segment), and one refusal of each kind a shopper can cause
        await shoppers(`a${t}`, () => (got.accepted ?? 0) >= 700);
        const shopper = `r${t}`;
        expect(count(await buy(big, shopper))).toEqual({ status: 202 });
        expect(count(await buy(big, shopper))).toEqual({ status: 409, code: 'limit-reached' });
        expect(count(await buy(big, shopper))).toEqual({ status: 429, code: 'rate-limited' });
        expect(count(await buy(soon, `s${t}`))).toEqual({ status: 425, code: 'not-started' });
        expect(count(await buy(past, `p${t}`))).toEqual({ status: 410, code: 'ended' });
        expect(count(await buy('not an id!', `b${t}`))).toMatchObject({ status: 400 });
        await expect.poll(() => shown(before), { timeout: 15_000 }).toEqual(expected(before));
        expect(got).toMatchObject({ limit: 1, rateLimited: 1, closed: 2, other: 1 });

        const during = await adminProduct(big);
        expect(during.remaining).toBe(1_536 - got.accepted!);
        await expectShows(page, big, during);
        expect(await cellTitles(page, big)).toHaveLength(1_024);
        expect(await text(page, `remaining-${soon}`)).toBe('1,234,567');
        // the countdown is the time left as the page read it: between what is left now and the
        // hour it started with (a loaded machine took minutes to get here once)
        const countdown = await text(page, `when-${soon}`);
        const m = /^starts in (?:(\d+) h )?(\d+) min (\d{2}) s$/.exec(countdown);
        expect(m, countdown).not.toBeNull();
        const left = Number(m![1] ?? 0) * 3_600 + Number(m![2]) * 60 + Number(m![3]);
        expect(left).toBeLessThanOrEqual(3_600);
        expect(left).toBeGreaterThanOrEqual(Math.floor((soonStartsAt - Date.now()) / 1_000) - 2);
        // live first, then upcoming, then sold out; the ended sale folded below them
        const statuses = await page.$$eval('#sales > details .badge', (b) =>
          b.map((e) => e.textContent),
        );
        const rank = statuses.map((s) => ['live', 'upcoming', 'sold out'].indexOf(s!));
        expect(rank).not.toContain(-1);
        expect(rank).toEqual([...rank].sort());
        expect(statuses).toContain('live');
        const ended = page.locator(`#ended [data-testid=sale-${past}]`);
        expect(await ended.evaluate((e) => (e as unknown as { open: boolean }).open)).toBe(false);
        expect(await text(page, `status-${past}`)).toBe('ended');
        // links to Bull Board and /metrics, which the session opens
        for (const [id, href] of [
          ['link-queues', '/admin/queues'],
          ['link-metrics', '/metrics'],
        ]) {
          expect(await page.getAttribute(`[data-testid=${id}]`, 'href')).toBe(href);
          expect((await context.request.get(`${app.url}${href}`)).status()).toBe(200);
        }
        const height = () => page.evaluate<number>('document.documentElement.scrollHeight');
        expect(await height()).toBeLessThanOrEqual(1_200);
        await page.screenshot({ path: join(shots, 'during.png'), fullPage: true });

        // a folded sale unfolds on a click, and stays so through the next snapshots
        const clock = await text(page, 'clock');
        await ended.locator('summary').click();
        await expect.poll(() => text(page, 'clock'), { timeout: 15_000 }).not.toBe(clock);
        expect(await ended.evaluate((e) => (e as unknown as { open: boolean }).open)).toBe(true);

        // the rest, by new shoppers until they are told it is sold out
        let soldOut = false;
        await shoppers(`z${t}`, () => soldOut || (soldOut = (got.soldOut ?? 0) > 0));
        expect(got.accepted).toBe(1_536); // every unit sold once: none over, none lost
        const after = await adminProduct(big);
        expect(after).toMatchObject({ remaining: 0, sold: 1_536 });
        await expectShows(page, big, after);
        await expect.poll(() => shown(before), { timeout: 15_000 }).toEqual(expected(before));
        // how long it took, once every order is persisted: first sale to last, from PostgreSQL
        await expect
          .poll(() => text(page, `when-${big}`), { timeout: 60_000 })
          .toMatch(/^sold out after /);
        const { rows } = await sql<{ first: Date; last: Date }>`
        select min(deducted_at) as first, max(deducted_at) as last from orders
        where product_id = ${big}`.execute(app.rt.db);
        const ms = rows[0]!.last.getTime() - rows[0]!.first.getTime();
        expect(await text(page, `when-${big}`)).toBe(`sold out after ${took(ms)}`);
        expect(await text(page, `status-${big}`)).toBe('sold out');
        const colours = await page.$$eval(`[data-testid=heat-${big}] i`, (cells) =>
          cells.map(
            (c) => (c as unknown as { style: { backgroundColor: string } }).style.backgroundColor,
          ),
        );
        expect(new Set(colours)).toEqual(new Set(['rgb(229, 231, 235)'])); // all empty
        expect(await height()).toBeLessThanOrEqual(1_200);
        await page.screenshot({ path: join(shots, 'sold-out.png'), fullPage: true });
        if (process.env.UPDATE_SCREENSHOT === '1') {
          copyFileSync(
            join(shots, 'during.png'),
            join(import.meta.dirname, '..', '..', 'docs', 'dashboard.png'),
          );
        }
      } finally {
        await context.close();
      }
    },
  );

  it("opens with the charts' recent past; the heat map's legend shows every colour a cell takes", async () => {
    const productId = `legend${Date.now().toString(36)}`;
    // 4 units over 6 segments: 2 segments get none (drawn white); 3 units bought leave 3
    // segments empty (grey) and one full (the darkest blue)
    await seed(productId, { total: 4, segments: 6, strategy: 'segmented' });
    for (let i = 0; i < 3; i++) {
      expect(await buy(productId, `legend-${productId}-${i}`)).toEqual({ status: 202 });
    }
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      // the feed has sampled since the purchases (every 2 s while nobody watches)
      await expect
        .poll(async () => (await streamHistory()).points.some((p) => p.accepted > 0), {
          timeout: 15_000,
        })
        .toBe(true);
      const opened = Date.now();
      await logIn(page, app.url, ns.adminToken);
      await page.waitForSelector(`[data-testid=heat-${productId}] i`, { timeout: 15_000 });
      // the first point on the charts is older than the page: the server's recent past
      const from = await page.$eval('#acceptedChart', (c) =>
        Number((c as unknown as { dataset: Record<string, string> }).dataset.from),
      );
      expect(from).toBeLessThan(opened);
      const colours = async (selector: string) =>
        new Set(
          await page.$$eval(selector, (els) =>
            els.map(
              (e) =>
                (
                  globalThis as unknown as {
                    getComputedStyle(el: unknown): { backgroundColor: string };
                  }
                ).getComputedStyle(e).backgroundColor,
            ),
          ),
        );
      await expectShows(page, productId, await adminProduct(productId));
      const cells = await colours(`[data-testid=heat-${productId}] i`);
      const legend = await colours(`[data-testid=legend-${productId}] i`);
      // white (none seeded), grey (sold empty) and at least one blue step, each in the legend
      expect(cells.has('rgb(255, 255, 255)')).toBe(true);
      expect(cells.size).toBe(3);
      expect([...cells].filter((c) => !legend.has(c))).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('the stream opens with the recent past', () => {
  it('sends the rates of the purchases made before anyone watched, then the snapshots', async () => {
    const productId = `hist${Date.now().toString(36)}`;
    expect(await seedAndBuy(productId, 12)).toBe(12);
    // nobody watches: the feed samples the counters every 2 s (IDLE_SAMPLE_MS)
    await expect
      .poll(async () => (await streamHistory()).points.some((p) => p.accepted > 0), {
        timeout: 15_000,
      })
      .toBe(true);
    expect((await streamHistory()).spanMs).toBe(HISTORY_MS);
  });
});
