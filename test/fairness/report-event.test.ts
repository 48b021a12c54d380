/**
 * A sale's fairness report on the feed (docs/fairness.md#on-the-feed): once a plain sale sold
 * out for good and its orders are persisted, the worker's sweep publishes `fairness.report` with
 * the report's figures, once for the sale epoch (a second sweep writes nothing), through the
 * product events' path (the feed's envelope, the webhooks).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const PRODUCT = `${ns.id}-ends`;
let a: RunningApp;

beforeAll(async () => {
  a = await startApp(
    ns.config({ TRUST_PROXY: 'true', RATE_LIMIT_USER: 'off', SWEEP_INTERVAL_MS: '200' }),
    { worker: true },
  );
});
afterAll(async () => {
  await a?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

interface FeedEvent {
  type: string;
  source: string;
  subject: string;
  productid?: string;
  data: Record<string, unknown>;
}

/** Every event of the feed of this product (its pages read to the end). */
async function feedOf(productId: string): Promise<FeedEvent[]> {
  const events: FeedEvent[] = [];
  let after = '';
  for (let page = 0; page < 1_000; page++) {
    const q = new URLSearchParams({ limit: '500', ...(after && { after }) });
    const res = await fetch(`${a.url}/admin/events?${q}`, { headers: admin });
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { events: FeedEvent[]; next: string };
    events.push(...body.events.filter((e) => e.productid === productId));
    if (body.events.length < 500) return events;
    after = body.next;
  }
  throw new Error('the feed did not end within 1 000 pages');
}

describe("a sale's fairness report on the feed", () => {
  it('goes out once when the sale sold out for good, with the figures of the report', async () => {
    const seeded = await fetch(`${a.url}/admin/products/${PRODUCT}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ total: 2, strategy: 'segmented', segments: 1, limitPerUser: 1 }),
    });
    expect(seeded.status, await seeded.clone().text()).toBe(201);
    const buy = (user: string, ip: string) =>
      fetch(`${a.url}/seckill`, {
        method: 'POST',
        headers: { 'x-user-id': user, 'x-forwarded-for': ip, 'content-type': 'application/json' },
        body: JSON.stringify({ productId: PRODUCT }),
      });
    const users = Array.from({ length: 5 }, (_, i) => `u${i}${randomBytes(4).toString('hex')}`);
    const answers = [];
    for (const [i, u] of users.entries()) answers.push((await buy(u, `10.40.${i}.1`)).status);
    expect(answers).toEqual([202, 202, 409, 409, 409]);

    const reports = await waitFor(
      'the fairness.report event on the feed',
      async () => {
        const found = (await feedOf(PRODUCT)).filter((e) => e.type === 'fairness.report');
        return found.length > 0 && found;
      },
      30_000,
    );
    const res = await fetch(`${a.url}/admin/products/${PRODUCT}/fairness`, { headers: admin });
    const { at: _at, clusters, ...report } = (await res.json()) as Record<string, unknown>;
    expect(report).toMatchObject({ identities: 5, units: 2, flagged: 0, final: true });
    // more sweeps pass (200 ms each): still exactly one
    const swept = Date.now();
    await waitFor('three more sweeps', async () => Date.now() - swept > 600, 5_000);
    const after = (await feedOf(PRODUCT)).filter((e) => e.type === 'fairness.report');
    expect(after).toHaveLength(1);
    expect(reports[0]).toMatchObject({
      source: '/seckill/fairness',
      subject: `${PRODUCT}/fairness/1`,
      data: { ...report, clusters, clustersTotal: (clusters as unknown[]).length },
    });
  });
});
