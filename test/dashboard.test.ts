/**
 * The live dashboard in a real headless Chromium (Debian's `chromium`, driven by playwright-core):
 * log in with the admin token (never in a URL), see exactly each segment's remaining stock and
 * the sold count after real purchases, and a wrong token gets no data. Also the stream's own
 * contract: admin only, and it ends when the viewer goes away.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from './support/app.js';
import { useNamespace } from './support/namespace.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
if (!CHROMIUM) {
  process.stderr.write(
    '[dashboard.test] no chromium (apt-get install chromium; .ci/run does): browser tests skipped\n',
  );
}

const ns = useNamespace();
let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  // TRUST_PROXY: the throttled login below comes from an address of its own (X-Forwarded-For)
  app = await startApp(ns.config({ TRUST_PROXY: 'true', ADMIN_GUESS_LIMIT: '5/m' }), {
    worker: true,
  });
  if (CHROMIUM) {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
  }
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

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
    const started = Date.now();
    while ((text.match(/^data: /gm) ?? []).length < 3) {
      text += new TextDecoder().decode((await reader.read()).value);
    }
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThan(600); // 3 snapshots: the first at once, then every 500 ms
    const snapshot = JSON.parse(
      text
        .split('\n')
        .find((l) => l.startsWith('data: '))!
        .slice(6),
    );
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

describe.skipIf(!CHROMIUM)('the page in headless Chromium', () => {
  it("after a login, shows exactly each segment's stock and the sold count; a wrong token shows no data", async () => {
    const productId = `dash${Date.now().toString(36)}`;
    const accepted = await seedAndBuy(productId, 13);
    expect(accepted).toBe(13);
    const state = (await (
      await fetch(`${app.url}/admin/products/${productId}`, { headers: admin })
    ).json()) as { segments: Array<{ segment: number; stock: number }> };

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

      expect(await page.textContent(`[data-testid=remaining-${productId}]`)).toBe('27');
      expect(await page.textContent(`[data-testid=accepted-${productId}]`)).toBe('13');
      for (const s of state.segments) {
        expect(await page.textContent(`[data-testid=segment-${productId}-${s.segment}]`)).toBe(
          String(s.stock),
        );
      }
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
      const dir = join(import.meta.dirname, '..', 'docs');
      mkdirSync(dir, { recursive: true });
      if (process.env.UPDATE_SCREENSHOT === '1') {
        await page.screenshot({ path: join(dir, 'dashboard.png'), fullPage: true });
      }
    } finally {
      await context.close();
    }
  });

  it('the same session opens Bull Board; after a logout neither opens', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
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
      await page.fill('#token', ns.adminToken);
      await page.click('button[type=submit]');
      await expect.poll(error).toMatch(/^429 Too many wrong admin tokens: .*\(retry in \d+ s\)$/);
      expect(await page.locator('#logout').count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});
