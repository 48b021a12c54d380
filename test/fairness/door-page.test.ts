/**
 * The door in a real Chromium (docs/fairness.md): with CHALLENGE=pow, the queue page this service
 * serves and the example storefront on its own origin each ask the product's challenge, solve it
 * in a web worker (queue-page/door-worker.js) while saying they are checking the browser, send
 * the answer once its floor passed, and are admitted: not one refusal, so no identity flagged.
 * With CHALLENGE=turnstile the queue page renders the provider's widget (a local fake served at
 * the provider's script URL) with the site key of the challenge's answer, bound to the shopper.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStorefront } from '../../src/cli/storefront.js';
import { freePort } from '../../src/launcher/process.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { useNamespace } from '../support/namespace.js';

sayIfNoBrowser('door-page.test');

const ns = useNamespace();
const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const productId = `door${randomBytes(3).toString('hex')}`;
let app: RunningApp;
let storefront: Server;
let origin: string;
let browser: Browser | undefined;
/** the same API with CHALLENGE=turnstile, its siteverify a local server */
let widgetApp: RunningApp;
let siteverify: Server;
const verified: Array<Record<string, string>> = [];
const SITE_KEY = '1x00000000000000000000AA';

/**
 * Turnstile's api.js as far as the page uses it: render(slot, options) puts a check box in the
 * slot; ticking it hands options.callback a token carrying the sitekey and cData.
 */
const FAKE_TURNSTILE = `window.turnstile = { render(slot, o) {
  const b = document.createElement('button'); b.type = 'button'; b.id = 'fake-turnstile';
  b.textContent = 'I am human (' + o.sitekey + ')';
  b.onclick = () => o.callback('good:' + o.cData + ':' + o.sitekey);
  slot.append(b);
} };`;

beforeAll(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  app = await startApp(
    ns.config({
      CORS_ORIGINS: origin,
      SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-door-page-0123456',
      ROOM_TICK_MS: '50',
      CHALLENGE: 'pow',
      CHALLENGE_PRODUCTS: productId,
      CHALLENGE_SECRET: 'a-challenge-secret-for-the-door-page-0123',
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
      waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 120 },
    }),
  });
  expect(seeded.status, await seeded.text()).toBe(201);
  storefront = await startStorefront({
    host: '127.0.0.1',
    port,
    api: app.url,
    productId,
    webhookSecret: 'a-payment-webhook-secret-for-the-door-page-01234',
  });
  siteverify = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(body));
      verified.push(form);
      const [good, cdata] = (form.response ?? '').split(':');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ success: good === 'good', 'error-codes': [], cdata }));
    });
  });
  await new Promise<void>((r) => siteverify.listen(0, '127.0.0.1', r));
  widgetApp = await startApp(
    ns.config({
      ROOM_TICK_MS: '50',
      CHALLENGE: 'turnstile',
      CHALLENGE_PRODUCTS: productId,
      CHALLENGE_SECRET: 'a-turnstile-secret-key-for-the-door-page',
      CHALLENGE_SITE_KEY: SITE_KEY,
      // a product may name hCaptcha on its own: its widget must load on the page too
      CHALLENGE_HCAPTCHA_SECRET: 'an-hcaptcha-secret-for-the-door-page',
      CHALLENGE_HCAPTCHA_SITE_KEY: 'an-hcaptcha-site-key',
      CHALLENGE_VERIFY_URL: `http://127.0.0.1:${(siteverify.address() as AddressInfo).port}/turnstile/v0/siteverify`,
    }),
  );
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await widgetApp?.close();
  await new Promise((r) => siteverify?.close(r));
  await new Promise((r) => storefront?.close(r));
  await app?.close();
});

async function withContext(fn: (context: BrowserContext) => Promise<void>): Promise<void> {
  const context = await browser!.newContext({ locale: 'en-US' });
  try {
    await fn(context);
  } finally {
    await context.close();
  }
}

async function stateOf(user: string): Promise<string> {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    headers: { 'x-user-id': user },
  });
  return ((await res.json()) as { state: string }).state;
}

interface Fairness {
  identities: number;
  flagged: number;
}

const fairness = async () =>
  (await (
    await fetch(`${app.url}/admin/products/${productId}/fairness`, { headers: admin })
  ).json()) as Fairness;

it.skipIf(!CHROMIUM)(
  'admits a clean shopper from the queue page, the challenge solved in a worker',
  async () => {
    await withContext(async (context) => {
      const page = await context.newPage();
      const workers: string[] = [];
      page.on('worker', (w) => workers.push(w.url()));
      await page.goto(`${app.url}/queue/${productId}#shopper=alice`);
      await page.locator('#qp-detail').filter({ hasText: 'Checking your browser' }).waitFor();
      await page
        .locator('#qp-heading')
        .filter({ hasText: "It's your turn!" })
        .waitFor({ timeout: 30_000 });
      expect(workers).toHaveLength(1);
      expect(workers[0]).toMatch(/\/queue\/assets\/door-worker\.[0-9a-f]{12}\.js$/);
    });
    expect(await stateOf('alice')).toBe('admitted');
  },
);

it.skipIf(!CHROMIUM)(
  'admits a clean shopper from the storefront on its own origin, the same solver',
  async () => {
    await withContext(async (context) => {
      const page = await context.newPage();
      await page.goto(`${origin}/?shopper=bob`);
      await page.locator('#title').filter({ hasText: productId }).waitFor();
      await page.click('#join');
      await page.locator('#checking').waitFor();
      await page.locator('#state[data-state="admitted"]').waitFor({ timeout: 30_000 });
      expect(await page.textContent('#problem')).toBe('');
      expect(await page.isHidden('#checking')).toBe(true);
    });
    expect(await stateOf('bob')).toBe('admitted');
    // both tried, neither was refused once (a refusal flags the identity)
    const report = await waitFor(
      'both shoppers in the fairness notes',
      async () => {
        const r = await fairness();
        return r.identities === 2 && r;
      },
      10_000,
      100,
    );
    expect(report).toMatchObject({ identities: 2, flagged: 0 });
  },
);

it("allows every configured captcha's origins in the page's CSP, not only CHALLENGE's", async () => {
  const csp = (await fetch(`${widgetApp.url}/queue/${productId}`)).headers.get(
    'content-security-policy',
  )!;
  const frames = /frame-src ([^;]*)/.exec(csp)?.[1]?.split(' ');
  expect(frames).toEqual([
    'https://challenges.cloudflare.com',
    'https://hcaptcha.com',
    'https://*.hcaptcha.com',
  ]);
  // a deployment with no captcha configured frames nothing
  const plain = (await fetch(`${app.url}/queue/${productId}`)).headers.get(
    'content-security-policy',
  )!;
  expect(plain).not.toContain('frame-src');
});

it('names the door and its solver in the page, served as scripts', async () => {
  const html = await (await fetch(`${app.url}/queue/${productId}`)).text();
  const door = /src="(\/queue\/assets\/door\.[0-9a-f]{12}\.js)"/.exec(html)?.[1];
  const worker = /"doorWorker":"(\/queue\/assets\/door-worker\.[0-9a-f]{12}\.js)"/.exec(html)?.[1];
  for (const path of [door, worker]) {
    const res = await fetch(`${app.url}${path}`);
    expect([res.status, res.headers.get('content-type')]).toEqual([
      200,
      'text/javascript; charset=utf-8',
    ]);
  }
  for (const path of ['/door.js', '/door-worker.js']) {
    expect((await fetch(`${origin}${path}`)).status).toBe(200);
  }
});

it.skipIf(!CHROMIUM)(
  "renders Turnstile's widget with the site key, bound to the shopper, on the queue page",
  async () => {
    await withContext(async (context) => {
      const page = await context.newPage();
      await page.route('https://challenges.cloudflare.com/turnstile/v0/api.js', (route) =>
        route.fulfill({ contentType: 'text/javascript', body: FAKE_TURNSTILE }),
      );
      const res = await page.goto(`${widgetApp.url}/queue/${productId}#shopper=carol`);
      expect(res!.headers()['content-security-policy']).toContain(
        'frame-src https://challenges.cloudflare.com',
      );
      await page.locator('#qp-detail').filter({ hasText: 'Checking your browser' }).waitFor();
      await page.click('#fake-turnstile');
      await page
        .locator('#qp-heading')
        .filter({ hasText: "It's your turn!" })
        .waitFor({ timeout: 30_000 });
      expect(await page.isHidden('#qp-door')).toBe(true);
    });
    expect(verified.map((f) => f.response)).toEqual([`good:carol:${SITE_KEY}`]);
  },
);
