/**
 * The signals a request carries (docs/fairness.md): the queue page's decoy link (in the page,
 * hidden from people; followed, it notes the identity and answers a plain 404 page, and the
 * sale's report flags it) and the account's age read from the shop's token claim.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountCreatedAt } from '../../src/http/auth.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const PRODUCT = `${ns.id}-decoy`;
let a: RunningApp;

beforeAll(async () => {
  a = await startApp(
    ns.config({
      TRUST_PROXY: 'true',
      SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
      RATE_LIMIT_USER: 'off',
    }),
    { worker: true },
  );
  const res = await fetch(`${a.url}/admin/products/${PRODUCT}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      total: 10,
      strategy: 'segmented',
      segments: 1,
      waitingRoom: { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 },
      startsAt: new Date(Date.now() + 3_600_000).toISOString(),
    }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
});
afterAll(async () => {
  await a?.close();
});

const newUser = () => `u${randomBytes(5).toString('hex')}`;

describe('the decoy link', () => {
  it('is in the queue page, hidden from sight, the keyboard and screen readers', async () => {
    const html = await (await fetch(`${a.url}/queue/${PRODUCT}`)).text();
    const link = /<a class="qp-decoy"[^>]*>/.exec(html)?.[0];
    expect(link).toBeDefined();
    expect(link).toContain(`href="/queue/${PRODUCT}/skip"`);
    expect(link).toContain('tabindex="-1"');
    expect(link).toContain('aria-hidden="true"');
  });

  it("notes who followed it, answers a plain 404 page, and the report's decoy rule flags them", async () => {
    const [follower, shopper] = [newUser(), newUser()];
    const join = (user: string, ip: string) =>
      fetch(`${a.url}/products/${PRODUCT}/queue`, {
        method: 'POST',
        headers: { 'x-user-id': user, 'x-forwarded-for': ip },
      });
    expect((await join(follower, '10.31.1.1')).status).toBe(200);
    expect((await join(shopper, '10.32.1.1')).status).toBe(200);
    const res = await fetch(`${a.url}/queue/${PRODUCT}/skip`, {
      headers: { 'x-user-id': follower, 'x-forwarded-for': '10.31.1.1' },
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('<h1>Not found</h1>');
    // without an identity: the same page, nothing noted
    expect((await fetch(`${a.url}/queue/${PRODUCT}/skip`)).status).toBe(404);
    const report = await waitFor(
      'the follower flagged by the decoy rule',
      async () => {
        const r = await fetch(`${a.url}/admin/products/${PRODUCT}/fairness`, {
          headers: { authorization: `Bearer ${ns.adminToken}` },
        });
        const body = (await r.json()) as { flaggedByRule: { decoy: number } };
        return body.flaggedByRule.decoy === 1 && body;
      },
      10_000,
    );
    expect(report).toMatchObject({
      identities: 2,
      flagged: 1,
      flaggedByRule: { decoy: 1, block: 0, burstAddress: 0, burstBlock: 0, challenge: 0 },
    });
  });
});

describe("an account's age from the shop's token", () => {
  const secret = 'a-jwt-secret-long-enough-0123456789';
  const auth = {
    mode: 'jwt' as const,
    jwtSecret: secret,
    jwksUrl: undefined,
    jwtIssuer: undefined,
    jwtAudience: undefined,
    adminToken: undefined,
    guessLimit: { name: 'admin-guess', limit: 10, windowMs: 60_000 } as never,
    accountAgeClaim: 'account_created',
  };
  const token = (claims: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('alice')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
  const req = (jwt: string) => ({ headers: { authorization: `Bearer ${jwt}` } });

  it('reads a NumericDate or an ISO date from the configured claim, else nothing', async () => {
    expect(await accountCreatedAt(req(await token({ account_created: 1_700_000_000 })), auth)).toBe(
      1_700_000_000_000,
    );
    const iso = '2026-12-01T00:00:00Z';
    expect(await accountCreatedAt(req(await token({ account_created: iso })), auth)).toBe(
      Date.parse(iso),
    );
    expect(await accountCreatedAt(req(await token({})), auth)).toBeUndefined();
    expect(await accountCreatedAt(req(await token({ account_created: 'soon' })), auth)).toBe(
      undefined,
    );
    // no claim configured, or dev mode: not read
    const jwt = await token({ account_created: 1_700_000_000 });
    expect(await accountCreatedAt(req(jwt), { ...auth, accountAgeClaim: undefined })).toBe(
      undefined,
    );
    expect(await accountCreatedAt(req(jwt), { ...auth, mode: 'dev' as never })).toBeUndefined();
  });
});
