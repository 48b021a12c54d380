/**
 * The queue page this service serves (queue-page/, docs/queue-page.md) in a real Chromium against
 * the real API (one Redis or the Cluster, PostgreSQL, the order worker): a shopper from the lobby
 * through the opening's countdown, the place and the estimate, admission, the "buy within" timer
 * and a purchase made with the keyboard; the hand-off to the shop's checkout with the sale token;
 * a reload and a dropped network keeping the place; a closed tab hearing its turn by Web Push (a
 * push service on this machine, delivered to the page's worker through the DevTools protocol) and
 * coming back admitted with the same token and deadline; the page framed by the shop, which hands
 * it the shopper; and no serious or critical axe-core violation in any state, at 360 px too.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import webPush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { useNamespace } from '../support/namespace.js';
import { startPushService, type LocalPushService } from '../support/push-service.js';

sayIfNoBrowser('queue-page.test');

const ROOT = join(import.meta.dirname, '..', '..');
const AXE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const ns = useNamespace();
const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const vapid = webPush.generateVAPIDKeys();
/** an admission lasts 20 s in the push test; its shopper hears it ends 15 s before */
const LEAD_S = 15;

let app: RunningApp;
/** the same API with the shop's checkout configured (QUEUE_PAGE_RETURN_URL) */
let handOff: RunningApp;
let shop: Server;
let shopOrigin: string;
let push: LocalPushService;
let browser: Browser | undefined;

/** The shop's own pages: its checkout (reads the hand-off, buys) and a page framing the queue. */
function shopPages(api: () => string): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const html = (body: string) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        `<!doctype html><html lang="en"><head><title>shop</title></head><body>${body}</body></html>`,
      );
    };
    if (path.startsWith('/checkout/')) {
      return html(`<h1>Checkout</h1><p id="got"></p><p id="order"></p><script>
        const hand = new URLSearchParams(location.hash.slice(1));
        document.getElementById('got').textContent = hand.get('productId') + ' until ' + hand.get('expiresAt');
        fetch('${api()}/seckill', { method: 'POST', headers: { 'content-type': 'application/json',
          'x-user-id': 'frank', 'sale-token': hand.get('saleToken') },
          body: JSON.stringify({ productId: hand.get('productId') }) })
          .then((r) => r.json()).then((b) => { document.getElementById('order').textContent = b.orderId; });
      </script>`);
    }
    if (path.startsWith('/embed/')) {
      const productId = path.slice('/embed/'.length);
      return html(`<h1>Our drop</h1><iframe title="waiting room" src="${api()}/queue/${productId}?lang=en" width="400" height="600"></iframe><script>
        addEventListener('message', (e) => {
          if (e.origin === '${api()}' && e.data && e.data.type === 'seckill:ready') {
            e.source.postMessage({ type: 'seckill:shopper', token: 'erin' }, e.origin);
          }
        });
      </script>`);
    }
    res.writeHead(404).end();
  });
}

beforeAll(async () => {
  push = await startPushService();
  shop = shopPages(() => app.url);
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  shopOrigin = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  const theme = join(tmpdir(), `queue-theme-${randomBytes(4).toString('hex')}.css`);
  writeFileSync(theme, ':root { --qp-brand: #7c2d12; --qp-font: Georgia, serif; }\n');
  const env = {
    CORS_ORIGINS: shopOrigin,
    SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-queue-page-0123456',
    ROOM_TICK_MS: '50',
    ROOM_EXPIRING_LEAD_S: String(LEAD_S),
    VAPID_PUBLIC_KEY: vapid.publicKey,
    VAPID_PRIVATE_KEY: vapid.privateKey,
    VAPID_SUBJECT: 'mailto:queue-page-test@localhost',
    PUSH_SERVICE_ORIGINS: push.origin,
    QUEUE_PAGE_THEME_CSS: theme,
    QUEUE_PAGE_SHOP_NAME: 'Test Shop',
  };
  app = await startApp(ns.config(env), { worker: true });
  handOff = await startApp(
    ns.config({ ...env, QUEUE_PAGE_RETURN_URL: `${shopOrigin}/checkout/{productId}` }),
  );
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await handOff?.close();
  await app?.close();
  await new Promise((r) => shop?.close(r));
  await push?.close();
});

const newProduct = () => `qp${randomBytes(4).toString('hex')}`;

async function seed(productId: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ strategy: 'segmented', segments: 2, limitPerUser: 1, ...body }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

interface View {
  state: string;
  position: number | null;
  saleToken?: string;
  saleTokenExpiresAt?: string;
}

async function place(user: string, productId: string, method = 'GET'): Promise<View> {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    method,
    headers: { 'x-user-id': user },
  });
  return (await res.json()) as View;
}

const admittedView = (user: string, productId: string) =>
  waitFor(
    `${user} admitted`,
    async () => {
      const v = await place(user, productId);
      return v.state === 'admitted' && v;
    },
    30_000,
  );

async function buyAs(user: string, productId: string, saleToken: string): Promise<void> {
  const res = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user, 'sale-token': saleToken },
    body: JSON.stringify({ productId }),
  });
  expect(res.status).toBe(202);
}

/** axe-core in the page: the serious and critical violations, as "id: nodes". */
async function axeViolations(page: Page): Promise<string[]> {
  // through the DevTools protocol: the page's CSP (scripts from its origin only) stays on
  if (!(await page.evaluate<boolean>("'axe' in window"))) await page.evaluate(AXE);
  const found = await page.evaluate<Array<{ id: string; impact: string; nodes: string[] }>>(`
    axe.run().then((r) => r.violations.map((v) => ({
      id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')),
    })))`);
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.join(', ')}`);
}

const heading = (page: Page) => page.locator('#qp-heading');
/** QUEUE_PAGE_SCREENSHOTS=docs: the pictures of docs/queue-page.md, taken as the test runs. */
async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.QUEUE_PAGE_SCREENSHOTS;
  if (dir) await page.screenshot({ path: join(dir, name), fullPage: true });
}
/** Intl writes narrow and no-break spaces (189,99 €): compared as plain ones. */
const spaced = async (text: Promise<string | null>) => (await text)?.replace(/\s/g, ' ');

async function withContext<T>(fn: (context: BrowserContext) => Promise<T>): Promise<T> {
  const context = await browser!.newContext({ locale: 'en-US' });
  try {
    return await fn(context);
  } finally {
    await context.close();
  }
}

describe('the queue page', () => {
  it.skipIf(!CHROMIUM)(
    'takes a shopper from the lobby through the opening to a purchase made with the keyboard, axe-clean in every state',
    async () => {
      const productId = newProduct();
      await seed(productId, {
        total: 3,
        startsAt: new Date(Date.now() + 6_000).toISOString(),
        price: { amount: 18999, currency: 'EUR' },
        waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 60 },
      });
      const product = (await (await fetch(`${app.url}/products/${productId}`)).json()) as {
        waitingRoom: { pageUrl: string };
      };
      expect(product.waitingRoom.pageUrl).toBe(`/queue/${productId}`);
      await withContext(async (context) => {
        const page = await context.newPage();
        await page.setViewportSize({ width: 360, height: 740 });
        const res = await page.goto(`${app.url}${product.waitingRoom.pageUrl}#shopper=alice`);
        expect(res!.headers()['content-security-policy']).toContain(
          `frame-ancestors 'self' ${shopOrigin}`,
        );
        // the lobby: a countdown to the opening, the draw explained, an estimate, the price
        await expect.poll(() => heading(page).textContent()).toBe("You're in");
        await expect.poll(() => page.textContent('#qp-countdown')).toMatch(/^Opens in 00:0\d$/);
        expect(await page.textContent('#qp-estimate')).toMatch(
          /^Your turn in about .+, at most .+\.$/,
        );
        await expect
          .poll(() => page.textContent('#qp-product'))
          .toBe('Price: €189.99 · 3 of 3 left');
        // the fragment (who the shopper is) is gone from the address bar
        expect(new URL(page.url()).hash).toBe('');
        // the shop's theme is loaded after the page's own style
        expect(
          await page.evaluate<string>(
            "getComputedStyle(document.documentElement).getPropertyValue('--qp-brand').trim()",
          ),
        ).toBe('#7c2d12');
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, 'queue-page-lobby-360.png');

        // the opening: admitted, a timer to buy within
        await expect
          .poll(() => heading(page).textContent(), { timeout: 20_000 })
          .toBe("It's your turn!");
        expect(await page.textContent('#qp-timer')).toMatch(/^Buy within 0[01]:\d\d$/);
        expect(await page.isVisible('#qp-buy')).toBe(true);
        expect(await page.isVisible('#qp-checkout')).toBe(false);
        expect(await axeViolations(page)).toEqual([]);
        await screenshot(page, 'queue-page-admitted-360.png');

        // the keyboard alone reaches the buy button and presses it
        for (let i = 0; i < 20; i++) {
          if (await page.evaluate<boolean>("document.activeElement?.id === 'qp-buy'")) break;
          await page.keyboard.press('Tab');
        }
        expect(await page.evaluate<string>('document.activeElement?.id')).toBe('qp-buy');
        await page.keyboard.press('Enter');
        await expect.poll(() => heading(page).textContent()).toBe('You bought it');
        const orderText = await page.textContent('#qp-detail');
        const orderId = /Your order: (\S+)\./.exec(orderText!)![1]!;
        const order = await (
          await fetch(`${app.url}/orders/${orderId}`, { headers: admin })
        ).json();
        expect(order).toMatchObject({ orderId, productId, userId: 'alice', quantity: 1 });
        // a reload after buying still says bought, not "your turn"
        await page.reload();
        await expect.poll(() => heading(page).textContent()).toBe('You bought it');
        expect(await axeViolations(page)).toEqual([]);
      });
    },
  );

  it.skipIf(!CHROMIUM)(
    "hands the turn to the shop's checkout with the sale token in the fragment",
    async () => {
      const productId = newProduct();
      await seed(productId, {
        total: 2,
        waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 60 },
      });
      await withContext(async (context) => {
        const page = await context.newPage();
        await page.goto(`${handOff.url}/queue/${productId}#shopper=frank`);
        await expect
          .poll(() => heading(page).textContent(), { timeout: 20_000 })
          .toBe("It's your turn!");
        expect(await page.isVisible('#qp-buy')).toBe(false);
        const href = (await page.getAttribute('#qp-checkout', 'href'))!;
        expect(href.startsWith(`${shopOrigin}/checkout/${productId}#saleToken=`)).toBe(true);
        await page.click('#qp-checkout');
        await page.waitForURL(`${shopOrigin}/checkout/**`);
        const view = await place('frank', productId);
        expect(await page.textContent('#got')).toBe(
          `${productId} until ${view.saleTokenExpiresAt}`,
        );
        const orderId = await waitFor(
          'the checkout bought',
          async () => (await page.textContent('#order')) || false,
          10_000,
        );
        const order = await (
          await fetch(`${app.url}/orders/${orderId}`, { headers: admin })
        ).json();
        expect(order).toMatchObject({ productId, userId: 'frank', quantity: 1 });
      });
    },
  );

  it.skipIf(!CHROMIUM)('keeps the place through a reload and a dropped network', async () => {
    const productId = newProduct();
    await seed(productId, {
      total: 3,
      // one seat: carol waits behind bob until he buys
      waitingRoom: { admitPerSecond: 10, maxActive: 1, admittedForSeconds: 60 },
    });
    await place('bob', productId, 'POST');
    const bob = await admittedView('bob', productId);
    await withContext(async (context) => {
      const page = await context.newPage();
      await page.setViewportSize({ width: 360, height: 740 });
      await page.goto(`${app.url}/queue/${productId}#shopper=carol`);
      await expect.poll(() => page.textContent('#qp-position')).toBe('Your place: 1');
      expect(await page.textContent('#qp-ahead')).toBe('0 shoppers ahead of you');
      expect(await axeViolations(page)).toEqual([]);
      await screenshot(page, 'queue-page-waiting-360.png');
      const before = await place('carol', productId);
      await page.reload();
      await expect.poll(() => page.textContent('#qp-position')).toBe('Your place: 1');
      expect(await place('carol', productId)).toMatchObject({
        state: 'waiting',
        position: before.position,
      });

      await context.setOffline(true);
      await expect
        .poll(() => page.textContent('#qp-connection'), { timeout: 15_000 })
        .toMatch(/offline/);
      await buyAs('bob', productId, bob.saleToken!);
      await admittedView('carol', productId);
      await context.setOffline(false);
      await expect
        .poll(() => heading(page).textContent(), { timeout: 20_000 })
        .toBe("It's your turn!");
      expect(await page.isVisible('#qp-connection')).toBe(false);
    });
  });

  it.skipIf(!CHROMIUM)(
    'pushes the turn to a closed tab, which comes back admitted with the same token and deadline',
    async () => {
      const productId = newProduct();
      await seed(productId, {
        total: 3,
        waitingRoom: { admitPerSecond: 10, maxActive: 1, admittedForSeconds: 20 },
      });
      await place('bob', productId, 'POST');
      const bob = await admittedView('bob', productId);
      const subscription = push.subscription();
      await withContext(async (context) => {
        await context.grantPermissions(['notifications'], { origin: app.url });
        // headless Chromium reaches no push service: its subscription is the test's, on this machine
        await context.addInitScript(`{
          const sub = ${JSON.stringify(subscription)};
          const made = { ...sub, expirationTime: null, toJSON: () => ({ ...sub, expirationTime: null }) };
          PushManager.prototype.subscribe = async () => made;
          PushManager.prototype.getSubscription = async () => made;
        }`);
        const page = await context.newPage();
        const devtools = await context.newCDPSession(page);
        const registrations: Array<{
          registrationId: string;
          scopeURL: string;
          isDeleted: boolean;
        }> = [];
        devtools.on('ServiceWorker.workerRegistrationUpdated', (e) =>
          registrations.push(...e.registrations),
        );
        await devtools.send('ServiceWorker.enable');
        await page.goto(`${app.url}/queue/${productId}#shopper=dave`);
        await expect.poll(() => page.textContent('#qp-position')).toBe('Your place: 1');
        await page.click('#qp-notify');
        await expect
          .poll(() => page.textContent('#qp-notify-status'))
          .toMatch(/^You'll get a notification/);
        const scope = `${app.url}/queue/`;
        const registration = await waitFor(
          'the worker registered',
          async () => registrations.find((r) => r.scopeURL === scope && !r.isDeleted) ?? false,
          10_000,
        );
        await page.close(); // the tab is gone

        await buyAs('bob', productId, bob.saleToken!);
        const dave = await admittedView('dave', productId);
        const admitted = await waitFor(
          'the push',
          async () => push.messages.find((m) => m.endpoint === subscription.endpoint) ?? false,
          15_000,
        );
        expect(push.refused).toEqual([]);
        expect(admitted.vapidKey).toBe(vapid.publicKey);
        expect(admitted.claims).toMatchObject({
          aud: push.origin,
          sub: 'mailto:queue-page-test@localhost',
        });
        expect(admitted.headers).toMatchObject({
          encoding: 'aes128gcm',
          urgency: 'high',
          topic: 'turn-admitted',
        });
        expect(Number(admitted.headers.ttl)).toBeLessThanOrEqual(20);
        const payload = JSON.parse(admitted.text) as Record<string, string>;
        expect(payload).toEqual({
          kind: 'admitted',
          productId,
          until: dave.saleTokenExpiresAt,
          url: `/queue/${productId}`,
          title: 'Test Shop',
          body: "It's your turn: buy before {until}.",
          lang: 'en',
        });

        // the push service hands it to the browser: the worker shows it, the tab closed
        const other = await context.newPage();
        const devtools2 = await context.newCDPSession(other);
        await devtools2.send('ServiceWorker.enable');
        await devtools2.send('ServiceWorker.deliverPushMessage', {
          origin: app.url,
          registrationId: registration.registrationId,
          data: admitted.text,
        });
        await other.goto(`${app.url}${payload.url}`);
        const shown = await waitFor(
          'the notification',
          async () => {
            const bodies = await other.evaluate<string[]>(
              'navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) => ns.map((n) => n.title + "|" + n.body))',
            );
            return bodies.length > 0 && bodies;
          },
          10_000,
        );
        expect(shown).toEqual([
          expect.stringMatching(
            /^Test Shop\|It's your turn: buy before \d\d:\d\d:\d\d( [AP]M)?\.$/,
          ),
        ]);
        // back within the admission: admitted, the same token and deadline
        await expect.poll(() => heading(other).textContent()).toBe("It's your turn!");
        expect(await place('dave', productId)).toMatchObject({
          state: 'admitted',
          saleToken: dave.saleToken,
          saleTokenExpiresAt: dave.saleTokenExpiresAt,
        });

        // LEAD_S before the admission ends, a second push says so
        const expiring = await waitFor(
          'the expiring push',
          async () =>
            push.messages.find(
              (m) => m.endpoint === subscription.endpoint && m.headers.topic === 'turn-expiring',
            ) ?? false,
          20_000,
        );
        expect(JSON.parse(expiring.text)).toMatchObject({
          kind: 'expiring',
          until: dave.saleTokenExpiresAt,
        });
        expect(
          push.messages
            .filter((m) => m.endpoint === subscription.endpoint)
            .map((m) => m.headers.topic),
        ).toEqual(['turn-admitted', 'turn-expiring']);
      });
    },
  );

  it.skipIf(!CHROMIUM)(
    'is framed by the shop, which hands it the shopper by postMessage',
    async () => {
      const productId = newProduct();
      await seed(productId, {
        total: 2,
        startsAt: new Date(Date.now() + 60_000).toISOString(),
        waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 60 },
      });
      await withContext(async (context) => {
        const page = await context.newPage();
        await page.goto(`${shopOrigin}/embed/${productId}`);
        const frame = page.frameLocator('iframe');
        await expect
          .poll(() => frame.locator('#qp-heading').textContent(), { timeout: 15_000 })
          .toBe("You're in");
        expect(await place('erin', productId)).toMatchObject({ state: 'waiting', position: null });
      });
    },
  );

  it.skipIf(!CHROMIUM)("speaks the shopper's language: Accept-Language, or ?lang=", async () => {
    const productId = newProduct();
    await seed(productId, {
      total: 2,
      startsAt: new Date(Date.now() + 60_000).toISOString(),
      price: { amount: 18999, currency: 'EUR' },
      waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 60 },
    });
    const context = await browser!.newContext({ locale: 'de-DE' });
    try {
      const page = await context.newPage();
      await page.goto(`${app.url}/queue/${productId}#shopper=gina`);
      expect(await page.getAttribute('html', 'lang')).toBe('de');
      await expect.poll(() => heading(page).textContent()).toBe('Du bist dabei');
      await expect
        .poll(() => spaced(page.textContent('#qp-product')))
        .toBe('Preis: 189,99 € · Noch 2 von 2');
      expect(await axeViolations(page)).toEqual([]);
      await page.goto(`${app.url}/queue/${productId}?lang=fr`);
      expect(await page.getAttribute('html', 'lang')).toBe('fr');
      await expect.poll(() => heading(page).textContent()).toBe('Vous y êtes');
      await expect
        .poll(() => spaced(page.textContent('#qp-product')))
        .toBe('Prix : 189,99 € · Il en reste 2 sur 2');
    } finally {
      await context.close();
    }
  });
});
