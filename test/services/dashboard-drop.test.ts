/**
 * The live dashboard during a drop, in a real Chromium: each waiting room's line (in line, seats,
 * admitted per second, abandoned, sold out while waiting, paused or not), the order-persistence
 * queue named as such, and the operator's buttons: pause, resume, units, the room's pace and end
 * now, shown without a hover and pressed by a tap, the keyboard or a click, each reaching every
 * process and written in the audit log under the name in the page's "who" box.
 */
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { waitFor } from '../support/cli.js';
import { logIn, text } from '../support/dashboard.js';
import { useNamespace } from '../support/namespace.js';

sayIfNoBrowser('dashboard-drop.test');

const ns = useNamespace();
let app: RunningApp;
let browser: Browser | undefined;

beforeAll(async () => {
  app = await startApp(
    ns.config({
      SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-dashboard-drop-0123',
      ROOM_TICK_MS: '50',
    }),
    { worker: true },
  );
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

describe.skipIf(!CHROMIUM)('the dashboard during a drop', () => {
  it('shows the room and runs the controls from its buttons, each audited under the operator', async () => {
    const productId = `dd${randomBytes(3).toString('hex')}`;
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({
        strategy: 'segmented',
        segments: 2,
        total: 10,
        // one seat: the rest of the line waits
        waitingRoom: { admitPerSecond: 10, maxActive: 1, admittedForSeconds: 60 },
      }),
    });
    expect(seeded.status).toBe(201);
    for (let i = 0; i < 5; i++) {
      const joined = await fetch(`${app.url}/products/${productId}/queue`, {
        method: 'POST',
        headers: { 'x-user-id': `dd${i}` },
      });
      expect(joined.status).toBe(200);
    }
    // a touch screen: nothing hovers there
    const context = await browser!.newContext({ hasTouch: true });
    const page: Page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    try {
      await logIn(page, app.url, ns.adminToken);
      await page.fill('[data-testid=operator]', 'Ana');
      await page.dispatchEvent('[data-testid=operator]', 'change');
      const shows = (testId: string, value: string) =>
        expect.poll(() => text(page, testId), { timeout: 15_000 }).toBe(value);
      // the line: one admitted, four waiting
      await shows(`room-in-line-${productId}`, '4');
      await shows(`room-seats-${productId}`, '1 / 1');
      await shows(`room-state-${productId}`, 'open');
      expect(await page.textContent('.tile:has([data-testid=persistence-queue]) span')).toMatch(
        /^order-persistence queue/,
      );

      // each control is pressed with the pointer away from its card: by a tap, from the
      // keyboard, or by a click; none waits for a hover (a hidden control times out in 5 s)
      const press = async (button: string, how: 'tap' | 'keyboard' | 'click', status: RegExp) => {
        await page.mouse.move(0, 0);
        const control = page.locator(`[data-testid=${button}-${productId}]`);
        expect(await control.isVisible(), `${button} is shown without a hover`).toBe(true);
        if (how === 'tap') await control.tap({ timeout: 5_000 });
        else if (how === 'click') await control.click({ timeout: 5_000 });
        else {
          await control.focus({ timeout: 5_000 });
          await page.keyboard.press('Enter');
        }
        await expect
          .poll(() => text(page, `control-status-${productId}`), { timeout: 15_000 })
          .toMatch(status);
      };
      await press('pause', 'tap', /^pause: done · now paused$/);
      await shows(`room-state-${productId}`, 'paused');
      await shows(`status-${productId}`, 'paused');
      await page.mouse.move(0, 0);
      await page.fill(`[data-testid=units-${productId}]`, '5', { timeout: 5_000 });
      await press('add', 'click', /^units: done \(5 units\)/);
      await shows(`remaining-${productId}`, '15');
      await press('resume', 'keyboard', /^resume: done · now live$/);
      await shows(`room-state-${productId}`, 'open');

      // the pace, from the room's row: every one in line admitted
      await page.fill(`[data-testid=room-pace-max-${productId}]`, '10');
      await page.click(`[data-testid=room-pace-${productId}]`);
      await expect
        .poll(() => text(page, `room-pace-status-${productId}`), { timeout: 15_000 })
        .toMatch(/^waiting-room: done/);
      await shows(`room-in-line-${productId}`, '0');
      await shows(`room-seats-${productId}`, '5 / 10');

      await press('end', 'tap', /^end: done · now ended$/);
      await shows(`status-${productId}`, 'ended');
    } finally {
      await context.close();
    }
    const audit = await waitFor(
      'the audit log',
      async () => {
        const res = await fetch(`${app.url}/admin/audit?productId=${productId}`, {
          headers: admin,
        });
        const { entries } = (await res.json()) as {
          entries: Array<{ action: string; outcome: string; actor: Record<string, string> }>;
        };
        return entries.length === 6 && entries.reverse();
      },
      10_000,
    );
    expect(audit.map((e) => `${e.action}:${e.outcome}`)).toEqual([
      'seed:done',
      'pause:done',
      'units:done',
      'resume:done',
      'waiting-room:done',
      'end:done',
    ]);
    for (const e of audit.slice(1)) {
      expect(e.actor).toMatchObject({ via: 'session', operator: 'Ana' });
    }
  });
});
