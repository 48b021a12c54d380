/**
 * The dashboard's draw and fairness panels (docs/dashboard.md): a draw on a local beacon chain
 * (three entries, one unit, the winner buys) and a plain sale beside it. The stream's snapshot
 * carries the draw's panel equal to its public transcript (entries, root, round R, the beacon's
 * randomness, winners, bought, passes, waitlist) and each sale's fairness panel equal to its
 * report (GET /admin/products/:id/fairness); the page, in Chromium, shows the same figures.
 */
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DashboardDraw, DashboardFairness } from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { startTestChain, type TestChain } from '../support/beacon.js';
import { waitFor } from '../support/cli.js';
import { CHROMIUM, launchBrowser, sayIfNoBrowser } from '../support/browser.js';
import { logIn, text } from '../support/dashboard.js';
import { useNamespace } from '../support/namespace.js';
import { waitForRows } from '../support/orders.js';

sayIfNoBrowser('dashboard-panels.test');

const ns = useNamespace();
const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const drawId = `dp${randomBytes(3).toString('hex')}`;
const plainId = `pp${randomBytes(3).toString('hex')}`;
const shoppers = ['ann', 'ben', 'cat'].map((u) => `${u}${randomBytes(2).toString('hex')}`);
/** The entries land well before the close on a loaded machine; the close is waited for. */
const ENTRY_WINDOW_MS = 4_000;
let chain: TestChain;
let app: RunningApp;
let browser: Browser | undefined;

interface Snapshot {
  draws: DashboardDraw[];
  fairness: DashboardFairness[];
}

interface Transcript {
  state: string;
  entries: number;
  root: string;
  round: number;
  roundAt: string;
  beacon: { randomness: string };
  winners: string[];
  waitlist: string[];
  offered: number;
  bought: string[];
}

beforeAll(async () => {
  chain = await startTestChain(1, 1_000);
  app = await startApp(
    ns.config({
      SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-panels-0123456789',
      ROOM_TICK_MS: '50',
      ROOM_LEASE_MS: '1000',
      ...chain.env,
    }),
    { worker: true },
  );
  if (CHROMIUM) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await chain?.close();
});

async function seed(productId: string, body: Record<string, unknown>) {
  const res = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ strategy: 'segmented', segments: 2, limitPerUser: 1, ...body }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

const buy = (productId: string, user: string, saleToken?: string) =>
  fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': user,
      ...(saleToken && { 'sale-token': saleToken }),
    },
    body: JSON.stringify({ productId }),
  });

const getJson = async <T>(path: string, headers: Record<string, string> = {}) =>
  (await (await fetch(`${app.url}${path}`, { headers })).json()) as T;

/** The stream's snapshots, read as a script would (bearer), until `done` holds for one. */
async function snapshotWhere(done: (s: Snapshot) => boolean): Promise<Snapshot> {
  const controller = new AbortController();
  const res = await fetch(`${app.url}/admin/dashboard/stream`, {
    headers: { authorization: `Bearer ${ns.adminToken}` },
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + 20_000;
  try {
    for (;;) {
      if (Date.now() > deadline) throw new Error('no snapshot showed the panels in 20 s');
      text += decoder.decode((await reader.read()).value, { stream: true });
      const lines = text.split('\n');
      text = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('data: {"at"')) continue;
        const s = JSON.parse(line.slice('data: '.length)) as Snapshot;
        if (done(s)) return s;
      }
    }
  } finally {
    controller.abort();
  }
}

it('shows the draw as its transcript says and each sale as its fairness report says', async () => {
  const closeAt = Date.now() + ENTRY_WINDOW_MS;
  await seed(drawId, {
    total: 1,
    draw: {
      entriesOpenAt: new Date(Date.now() - 1_000).toISOString(),
      entriesCloseAt: new Date(closeAt).toISOString(),
      buyWithinSeconds: 120,
    },
  });
  await seed(plainId, { total: 5 });
  for (const u of shoppers) {
    const res = await fetch(`${app.url}/products/${drawId}/draw/entry`, {
      method: 'POST',
      headers: { 'x-user-id': u },
    });
    expect(res.status).toBe(201);
  }
  expect((await buy(plainId, 'dan')).status).toBe(202);
  expect((await buy(plainId, 'eve')).status).toBe(202);

  // while open: the entries, no freeze yet
  const open = await snapshotWhere((s) => s.draws.some((d) => d.productId === drawId));
  expect(open.draws.find((d) => d.productId === drawId)).toMatchObject({
    state: 'open',
    entries: 3,
    root: null,
    round: null,
    winners: 0,
  });

  await waitFor('the close', async () => Date.now() > closeAt, ENTRY_WINDOW_MS + 5_000, 100);
  const drawn = await waitFor(
    'the draw',
    async () => {
      const t = await getJson<Transcript>(`/products/${drawId}/draw`);
      return t.state === 'drawn' && t.offered > 0 && t;
    },
    20_000,
    100,
  );
  const views = await Promise.all(
    shoppers.map((u) =>
      getJson<{ state: string; saleToken?: string }>(`/products/${drawId}/draw/entry`, {
        'x-user-id': u,
      }),
    ),
  );
  const won = views.findIndex((v) => v.state === 'won');
  expect(won).toBeGreaterThanOrEqual(0);
  expect((await buy(drawId, shoppers[won]!, views[won]!.saleToken)).status).toBe(202);
  await waitForRows(app.rt.db, drawId, 1);
  await waitForRows(app.rt.db, plainId, 2);
  const transcript = await waitFor(
    'the purchase in the transcript',
    async () => {
      const t = await getJson<Transcript>(`/products/${drawId}/draw`);
      return t.bought.length === 1 && t;
    },
    20_000,
    100,
  );
  expect(transcript.root).toBe(drawn.root);

  const s = await snapshotWhere((x) =>
    x.draws.some((d) => d.productId === drawId && d.bought === 1 && d.randomness !== null),
  );
  expect(s.draws.map((d) => d.productId)).toEqual([drawId]);
  expect(s.draws[0]).toMatchObject({
    productId: drawId,
    state: 'drawn',
    entries: 3,
    removed: 0,
    root: transcript.root,
    round: transcript.round,
    roundAt: transcript.roundAt,
    randomness: transcript.beacon.randomness,
    winners: 1,
    bought: 1,
    passes: 0,
    waitlist: 2,
  });
  for (const id of [drawId, plainId]) {
    const report = await getJson<DashboardFairness & { clusters: unknown[] }>(
      `/admin/products/${id}/fairness`,
      admin,
    );
    const panel = s.fairness.find((f) => f.productId === id);
    expect(panel, id).toMatchObject({
      identities: report.identities,
      flagged: report.flagged,
      units: report.units,
      flaggedUnits: report.flaggedUnits,
      fairShare: report.fairShare,
      band: report.band,
      advantage: report.advantage,
      top1PercentShare: report.top1PercentShare,
      clusters: report.clusters.length,
    });
  }
  expect(s.fairness.find((f) => f.productId === plainId)).toMatchObject({ units: 2 });
  expect(s.fairness.find((f) => f.productId === drawId)).toMatchObject({ units: 1 });

  if (!browser) return;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    await logIn(page, app.url, ns.adminToken);
    await expect.poll(() => text(page, `draw-bought-${drawId}`), { timeout: 15_000 }).toBe('1');
    expect(await text(page, `draw-entries-${drawId}`)).toBe('3');
    expect(await text(page, `draw-winners-${drawId}`)).toBe('1');
    expect(await text(page, `draw-passes-${drawId}`)).toBe('0');
    expect(await text(page, `draw-waitlist-${drawId}`)).toBe('2');
    expect(await text(page, `draw-freeze-${drawId}`)).toContain(
      `root ${transcript.root.slice(0, 12)}… · round ${transcript.round}`,
    );
    expect(await text(page, `draw-beacon-${drawId}`)).toContain(
      transcript.beacon.randomness.slice(0, 12),
    );
    // the fairness panel shows when asked, by the header's button
    expect(await page.isVisible(`[data-testid="fair-units-${plainId}"]`)).toBe(false);
    await page.click('[data-testid="fairness-toggle"]');
    expect(await text(page, `fair-units-${plainId}`)).toBe('2');
    const shots = process.env.DASHBOARD_PANELS_SCREENSHOT;
    if (shots) await page.screenshot({ path: shots, fullPage: true });
    expect(await text(page, `fair-units-${drawId}`)).toBe('1');
    expect(await page.isVisible(`[data-testid="draw-state-${plainId}"]`)).toBe(false);
  } finally {
    await context.close();
  }
});
