/**
 * The door in a real Chromium (docs/fairness.md): with CHALLENGE=pow, the queue page this service
 * serves and the example storefront on its own origin each ask the product's challenge, solve it
 * in a web worker (queue-page/door-worker.js) while saying they are checking the browser, send
 * the answer once its floor passed, and are admitted: not one refusal, so no identity flagged.
 */
import type { Server } from 'node:http';
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
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
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
