/**
 * /docs in a real headless Chromium (Debian's `chromium`, driven by playwright-core): the API
 * reference renders every operation of /openapi.json, and the page asks no other origin for
 * anything (its assets are served by this process).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/http/openapi/document.js';
import { startApp, type RunningApp } from '../support/app.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { useNamespace } from '../support/namespace.js';

sayIfNoBrowser('api-reference.test');

const ns = useNamespace();
let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  app = await startApp(ns.config({}));
  if (CHROMIUM) {
    browser = await launchBrowser();
  }
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe.skipIf(!CHROMIUM)('/docs in a browser', () => {
  it('renders every operation, and every request the page makes stays on this server', async () => {
    const page = await browser!.newPage();
    const origins = new Set<string>();
    const failed: string[] = [];
    page.on('request', (r) => origins.add(new URL(r.url()).origin));
    page.on('requestfailed', (r) => failed.push(r.url()));
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const res = await page.goto(`${app.url}/docs`);
    expect(res?.status()).toBe(200);
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    await expect
      .poll(() => page.locator('.opblock').count(), { timeout: 30_000 })
      .toBe(OPERATIONS.length);
    // the operations are the document's, by their ids
    const ids = await page.$$eval('.opblock', (els) => els.map((e) => e.id));
    for (const op of OPERATIONS.slice(0, 3)) {
      expect(ids.some((id) => id.includes(op.operationId))).toBe(true);
    }
    expect(await page.textContent('.title')).toContain('seckill');
    expect([...origins]).toEqual([app.url]);
    expect(failed).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
