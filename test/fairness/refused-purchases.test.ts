/**
 * A plain sale's refused purchases count in its fairness report (docs/fairness.md): the shoppers
 * refused by POST /seckill (sold out, answered from memory or by the sale) are noted as having
 * tried, in memory and with the joins' batch, so E counts them with the buyers. Two API
 * processes, Redis (standalone and Cluster) and PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const PRODUCT = `${ns.id}-plain`;
let a: RunningApp;
let b: RunningApp;

beforeAll(async () => {
  const config = ns.config({ TRUST_PROXY: 'true', RATE_LIMIT_USER: 'off' });
  a = await startApp(config, { worker: true });
  b = await startApp(config);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newUser = () => `u${randomBytes(5).toString('hex')}`;

const buy = (app: RunningApp, user: string, ip: string) =>
  fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: { 'x-user-id': user, 'x-forwarded-for': ip, 'content-type': 'application/json' },
    body: JSON.stringify({ productId: PRODUCT }),
  });

describe("a plain sale's refused purchases", () => {
  it('count in E: 5 identities refused by a sold-out sale, 2 bought before, E = 7', async () => {
    const seeded = await fetch(`${a.url}/admin/products/${PRODUCT}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ total: 2, strategy: 'segmented', segments: 1, limitPerUser: 1 }),
    });
    expect(seeded.status, await seeded.clone().text()).toBe(201);
    const buyers = [newUser(), newUser()];
    for (const [i, u] of buyers.entries()) {
      expect((await buy(a, u, `10.20.${i + 1}.1`)).status).toBe(202);
    }
    // refused on both processes, each from an address of its own (no block rule flags them)
    const refused = Array.from({ length: 5 }, () => newUser());
    for (const [i, u] of refused.entries()) {
      const res = await buy(i % 2 ? a : b, u, `10.21.${i + 1}.1`);
      expect(res.status).toBe(409);
    }
    // and once more each: E counts identities, not attempts
    for (const [i, u] of refused.entries()) {
      expect((await buy(i % 2 ? b : a, u, `10.21.${i + 1}.1`)).status).toBe(409);
    }
    const report = await waitFor(
      'seven identities noted and two units persisted',
      async () => {
        const res = await fetch(`${a.url}/admin/products/${PRODUCT}/fairness`, { headers: admin });
        const r = (await res.json()) as { identities: number; units: number };
        return r.identities === 7 && r.units === 2 && r;
      },
      15_000,
    );
    // mu = U * F / E = 0: nobody flagged
    expect(report).toMatchObject({
      mode: 'plain',
      identities: 7,
      flagged: 0,
      units: 2,
      flaggedUnits: 0,
      final: true,
    });
  });
});
