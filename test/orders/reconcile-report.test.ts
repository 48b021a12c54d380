/**
 * Reconciliation says what the drop's controls did to a sale as they did it: seeded 100, added
 * 10, taken 5 (100 + 10 - 5 on sale), in the API's report and the CLI's lines, where it said
 * "seeded 105"; and it stays exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({}), { worker: true });
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(() => app.url, 'unused-secret-long-enough-0123456789', ns.adminToken);

const units = async (productId: string, body: { add: number } | { withdraw: number }) => {
  const res = await fetch(`${app.url}/admin/products/${productId}/units`, {
    method: 'POST',
    headers: client.admin,
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
};

describe('reconciliation of a drop whose units operators changed', () => {
  it('says seeded 100, added 10, taken 5 (105 on sale), in the API and the CLI', async () => {
    const p = newProduct();
    await client.seed(p, { total: 100, segments: 4 });
    await units(p, { add: 10 });
    await units(p, { withdraw: 3 });
    await units(p, { withdraw: 2 });
    for (let i = 0; i < 7; i++) expect((await client.buy(p, newUser())).ok).toBe(true);

    const res = await fetch(`${app.url}/admin/products/${p}/reconcile`, {
      method: 'POST',
      headers: client.admin,
    });
    const report = (await res.json()) as Record<string, unknown>;
    expect(report).toMatchObject({
      ok: true,
      seeded: 100,
      added: 10,
      taken: 5,
      total: 105,
      remaining: 98,
    });

    const run = runCli(['reconcile', p], {
      ...(ns.clustered
        ? {
            REDIS_CLUSTER_NODES: ns.redisTarget
              .cluster!.map((n) => `${n.host}:${n.port}`)
              .join(','),
          }
        : { REDIS_URL: ns.redisUrl }),
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
    });
    expect(await run.exited, run.stderr()).toBe(0);
    const lines = run.stdout().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^ {2}seeded +100$/),
        expect.stringMatching(/^ {2}added +10 +\(put on sale by operators\)$/),
        expect.stringMatching(/^ {2}taken +5 +\(unsold units taken off sale by operators\)$/),
        expect.stringMatching(/^ {2}on sale +105$/),
        'OK: every unit is accounted for',
      ]),
    );
    expect(run.stdout()).not.toMatch(/seeded +105/);
  });

  it('a sale no operator changed shows its seeded units alone', async () => {
    const p = newProduct();
    await client.seed(p, { total: 20, segments: 2 });
    const res = await fetch(`${app.url}/admin/products/${p}/reconcile`, {
      method: 'POST',
      headers: client.admin,
    });
    expect(await res.json()).toMatchObject({ seeded: 20, added: 0, taken: 0, total: 20 });
  });
});
