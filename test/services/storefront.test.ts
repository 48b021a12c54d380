/**
 * The storefront example (examples/storefront, served by src/cli/storefront.ts as `up` serves
 * it) in a real Chromium, on an origin of its own: a shopper waits in line behind another (the
 * page shows the place and the estimate), is admitted when the seat frees, buys with the sale
 * token, pays through the demo provider's signed webhook, and sees the order paid. One order, one
 * unit sold, reconciliation clean.
 */
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStorefront } from '../../src/cli/storefront.js';
import { freePort } from '../../src/launcher/process.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { useNamespace } from '../support/namespace.js';

sayIfNoBrowser('storefront.test');

const ns = useNamespace();
const WEBHOOK_SECRET = 'a-payment-webhook-secret-for-the-storefront-0123';
const productId = `drop${randomBytes(3).toString('hex')}`;
let app: RunningApp;
let storefront: Server;
let origin: string;
let browser: Browser | undefined;

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

beforeAll(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  app = await startApp(
    ns.config({
      CORS_ORIGINS: origin,
      SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-storefront-0123456',
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      ROOM_TICK_MS: '50',
    }),
    { worker: true },
  );
  const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({
      strategy: 'segmented',
      segments: 2,
      total: 5,
      limitPerUser: 1,
      payWithinSeconds: 300,
      // one seat: a second shopper waits behind the first
      waitingRoom: { admitPerSecond: 10, maxActive: 1, admittedForSeconds: 120 },
    }),
  });
  expect(seeded.status, await seeded.text()).toBe(201);
  storefront = await startStorefront({
    host: '127.0.0.1',
    port,
    api: app.url,
    productId,
    webhookSecret: WEBHOOK_SECRET,
  });
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await new Promise((r) => storefront?.close(r));
  await app?.close();
});

interface View {
  state: string;
  saleToken?: string;
}

/** Polls until `done` holds. */
function pollUntil(user: string, done: (v: View) => boolean): Promise<View> {
  return waitFor(
    `${user}'s place to turn`,
    async () => {
      const res = await fetch(`${app.url}/products/${productId}/queue`, {
        headers: { 'x-user-id': user },
      });
      const view = (await res.json()) as View;
      return done(view) && view;
    },
    30_000,
  );
}

it.skipIf(!CHROMIUM)(
  'takes a shopper on another origin from the line to a paid order',
  async () => {
    expect(new URL(origin).origin).not.toBe(new URL(app.url).origin);
    // bob takes the one seat first
    await fetch(`${app.url}/products/${productId}/queue`, {
      method: 'POST',
      headers: { 'x-user-id': 'bob' },
    });
    const bob = await pollUntil('bob', (v) => v.state === 'admitted');

    const context = await browser!.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/?shopper=alice`);
      await page.locator('#title').filter({ hasText: productId }).waitFor();
      await page.click('#join');
      // in line behind bob: the page shows the place and the estimate
      await page.locator('#state[data-state="waiting"]').waitFor();
      await expect.poll(() => page.textContent('#place')).toMatch(/^Place 1 \(0 ahead of you\)$/);
      expect(await page.textContent('#estimate')).toMatch(/^About \d+ s, at most ~\d+ s$/);
      expect(await page.isDisabled('#buy')).toBe(true);

      // bob buys: his seat frees, and alice's page, polling as told, sees her turn
      const bought = await fetch(`${app.url}/seckill`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-user-id': 'bob',
          'sale-token': bob.saleToken!,
        },
        body: JSON.stringify({ productId }),
      });
      expect(bought.status).toBe(202);
      await page.locator('#state[data-state="admitted"]').waitFor({ timeout: 30_000 });
      await page.click('#buy');
      await page.locator('#order-status[data-status="awaiting_payment"]').waitFor();
      await page.click('#pay');
      await page.locator('#order-status[data-status="paid"]').waitFor();
      expect(await page.textContent('#problem')).toBe('');
      const orderId = (await page.textContent('#order-id'))!;

      const order = await fetch(`${app.url}/orders/${orderId}`, { headers: admin });
      expect(await order.json()).toMatchObject({
        orderId,
        productId,
        userId: 'alice',
        status: 'paid',
        quantity: 1,
      });
    } finally {
      await context.close();
    }
    const report = (await (
      await fetch(`${app.url}/admin/products/${productId}/reconcile`, {
        method: 'POST',
        headers: admin,
      })
    ).json()) as { ok: boolean; total: number; remaining: number };
    expect(report).toMatchObject({ ok: true, total: 5, remaining: 3 });
  },
);

it('serves nothing but the page, its files, its config and the demo provider', async () => {
  const get = (path: string) => fetch(`${origin}${path}`);
  expect((await get('/')).headers.get('content-type')).toMatch(/^text\/html/);
  expect(await (await get('/storefront-config.json')).json()).toEqual({ api: app.url, productId });
  expect((await get('/../package.json')).status).toBe(404);
  expect((await get('/storefront.ts')).status).toBe(404);
  const bad = await fetch(`${origin}/demo-provider/pay`, { method: 'POST', body: '{' });
  expect(bad.status).toBe(400);
  // a notice for an intent that does not exist: the API's own refusal, passed on
  const unknown = await fetch(`${origin}/demo-provider/pay`, {
    method: 'POST',
    body: JSON.stringify({
      orderId: '00000000-0000-4000-8000-000000000000',
      paymentIntentId: 'pi_AAAAAAAAAAAAAAAAAAAAAA',
    }),
  });
  expect(unknown.status).toBe(404);
});
