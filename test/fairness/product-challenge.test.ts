/**
 * A product's own challenge at the door (docs/fairness.md) through the real API, two API
 * processes, Redis (standalone and Cluster) and PostgreSQL: seeded on the product it wins over
 * the deployment's CHALLENGE (null turns it off), it is in the product's public view, a bad kind
 * or one whose key is not configured is refused and writes nothing; and a draw's entry pays at
 * the same door as a join (its refusals, nothing written, the entry counted as tried).
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
/** a: no deployment challenge (CHALLENGE off), keys for pow and hCaptcha; b: CHALLENGE=pow */
let a: RunningApp;
let b: RunningApp;

const POW_KEY = 'a-pow-hmac-key-0123456789';
const base = {
  TRUST_PROXY: 'true',
  SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
  RATE_LIMIT_USER: 'off',
};

beforeAll(async () => {
  a = await startApp(
    ns.config({
      ...base,
      CHALLENGE_POW_SECRET: POW_KEY,
      CHALLENGE_HCAPTCHA_SECRET: 'an-hcaptcha-secret',
      CHALLENGE_HCAPTCHA_SITE_KEY: 'an-hcaptcha-site-key',
    }),
    { worker: true },
  );
  b = await startApp(ns.config({ ...base, CHALLENGE: 'pow', CHALLENGE_SECRET: POW_KEY }));
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `${ns.id}-${randomBytes(3).toString('hex')}`;
const newUser = () => `u${randomBytes(5).toString('hex')}`;
const newIp = () => `10.${[1, 2, 3].map(() => 1 + Math.floor(Math.random() * 250)).join('.')}`;
const room = { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 };
const later = () => new Date(Date.now() + 3_600_000).toISOString();

function put(productId: string, body: Record<string, unknown>, query = '') {
  return fetch(`${a.url}/admin/products/${productId}${query}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ total: 10, strategy: 'segmented', segments: 2, ...body }),
  });
}

async function seed(productId: string, body: Record<string, unknown>): Promise<number> {
  const res = await put(productId, body);
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { epoch: number }).epoch;
}

async function publicView(app: RunningApp, productId: string) {
  const res = await fetch(`${app.url}/products/${productId}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const who = (user: string, ip: string, challenge?: string) => ({
  'x-user-id': user,
  'x-forwarded-for': ip,
  ...(challenge !== undefined && { challenge }),
});

const join = (app: RunningApp, productId: string, user: string, ip: string, challenge?: string) =>
  fetch(`${app.url}/products/${productId}/queue`, {
    method: 'POST',
    headers: who(user, ip, challenge),
  });

const enter = (app: RunningApp, productId: string, user: string, ip: string, challenge?: string) =>
  fetch(`${app.url}/products/${productId}/draw/entry`, {
    method: 'POST',
    headers: who(user, ip, challenge),
  });

interface PowChallenge {
  algorithm: string;
  challenge: string;
  maxnumber: number;
  salt: string;
  signature: string;
  floorMs: number;
}

/** A proof of work solved as a native solver would; the Challenge header's payload. */
async function answer(app: RunningApp, productId: string, user: string, ip: string) {
  const res = await fetch(`${app.url}/products/${productId}/challenge`, { headers: who(user, ip) });
  expect(res.status, await res.clone().text()).toBe(200);
  const c = (await res.json()) as PowChallenge;
  let number = 0;
  while (createHash('sha256').update(`${c.salt}${number}`).digest('hex') !== c.challenge) {
    number++;
    expect(number).toBeLessThanOrEqual(c.maxnumber);
  }
  const { algorithm, challenge, salt, signature } = c;
  const payload = { algorithm, challenge, number, salt, signature };
  return { floorMs: c.floorMs, header: Buffer.from(JSON.stringify(payload)).toString('base64') };
}

async function problem(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { type: string };
  return { status: res.status, code: body.type.replace('urn:seckill:problem:', '') };
}

const placesOf = (productId: string, epoch: number) =>
  a.rt.redis.hlen(a.rt.keys.room(productId, epoch).places);

describe("a product's own challenge", () => {
  it("wins over the deployment's CHALLENGE, null turns it off, and the page is told which", async () => {
    const own = newProduct();
    const off = newProduct();
    const deployment = newProduct();
    const captcha = newProduct();
    const ownEpoch = await seed(own, {
      waitingRoom: room,
      startsAt: later(),
      challenge: { kind: 'pow', floorMs: 0 },
    });
    await seed(off, { waitingRoom: room, startsAt: later(), challenge: null });
    await seed(deployment, { waitingRoom: room, startsAt: later() });
    await seed(captcha, { waitingRoom: room, startsAt: later(), challenge: { kind: 'hcaptcha' } });

    // the page reads the kind and the widget's site key (never a secret)
    const pow = { kind: 'pow', siteKey: null };
    expect((await publicView(a, own)).body.challenge).toEqual(pow);
    expect((await publicView(b, own)).body.challenge).toEqual(pow);
    expect((await publicView(b, off)).body.challenge).toBeNull();
    expect((await publicView(a, deployment)).body.challenge).toBeNull();
    expect((await publicView(b, deployment)).body.challenge).toEqual(pow);
    expect((await publicView(a, captcha)).body.challenge).toEqual({
      kind: 'hcaptcha',
      siteKey: 'an-hcaptcha-site-key',
    });

    // a: CHALLENGE off, yet this product asks a proof of work
    const [u0, u1, u2] = [newUser(), newUser(), newUser()];
    const ip1 = newIp();
    expect(await problem(await join(a, own, u0, newIp()))).toEqual({
      status: 403,
      code: 'challenge-required',
    });
    expect(await placesOf(own, ownEpoch)).toBe(0);
    const solved = await answer(a, own, u1, ip1);
    expect(solved.floorMs).toBe(0); // the product's floor, not CHALLENGE_CLEAN_FLOOR_MS
    // checked by the other process (its CHALLENGE_SECRET is the same key)
    expect((await join(b, own, u1, ip1, solved.header)).status).toBe(200);
    expect(await placesOf(own, ownEpoch)).toBe(1);
    // b: CHALLENGE=pow, yet this product's door is off
    expect((await join(b, off, u2, newIp())).status).toBe(200);
    // seeded without one, a product has the deployment's: none on a, pow on b
    expect((await join(a, deployment, u2, newIp())).status).toBe(200);
    expect(await problem(await join(b, deployment, newUser(), newIp()))).toEqual({
      status: 403,
      code: 'challenge-required',
    });
  });

  it('refuses a bad kind, a bad floor or a kind without its key, and writes nothing', async () => {
    const fresh = newProduct();
    const refused = async (body: Record<string, unknown>, query = '') => {
      const res = await put(fresh, body, query);
      return problem(res);
    };
    expect(await refused({ challenge: { kind: 'captcha' } })).toEqual({
      status: 400,
      code: 'invalid-request',
    });
    expect(await refused({ challenge: { kind: 'pow', floorMs: 5_000 } })).toEqual({
      status: 400,
      code: 'invalid-request',
    });
    expect(await refused({ challenge: { kind: 'hcaptcha', siteKey: 'x' } })).toEqual({
      status: 400,
      code: 'invalid-request',
    });
    // no CHALLENGE_TURNSTILE_SECRET on this deployment
    expect(await refused({ challenge: { kind: 'turnstile' } })).toEqual({
      status: 422,
      code: 'challenge-not-configured',
    });
    expect((await publicView(a, fresh)).status).toBe(404);

    // a reseed refused keeps the sale as it was
    const kept = newProduct();
    await seed(kept, { challenge: { kind: 'pow', floorMs: 0 } });
    const res = await put(kept, { challenge: { kind: 'turnstile' } }, '?force=true');
    expect(await problem(res)).toEqual({ status: 422, code: 'challenge-not-configured' });
    const view = await fetch(`${a.url}/admin/products/${kept}`, { headers: admin });
    expect(await view.json()).toMatchObject({ epoch: 1, challenge: { kind: 'pow', floorMs: 0 } });
  });
});

describe("a draw's entry pays at the door", () => {
  it('is refused as a join is, writes no entry, and is counted as tried with its failures', async () => {
    const product = newProduct();
    const epoch = await seed(product, {
      challenge: { kind: 'pow', floorMs: 0 },
      draw: {
        entriesOpenAt: new Date(Date.now() - 1_000).toISOString(),
        entriesCloseAt: later(),
        buyWithinSeconds: 60,
      },
    });
    const entries = () => a.rt.redis.hlen(a.rt.keys.draw(product, epoch).entries);
    const [missing, good] = [newUser(), newUser()];
    const [ipMissing, ipGood] = [newIp(), newIp()];

    expect(await problem(await enter(a, product, missing, ipMissing))).toEqual({
      status: 403,
      code: 'challenge-required',
    });
    expect(await problem(await enter(b, product, missing, ipMissing, 'not-a-payload'))).toEqual({
      status: 403,
      code: 'challenge-invalid',
    });
    // refused twice, the identity is flagged: its floor is the flagged one (15 s and more)
    const tooSoon = await answer(a, product, missing, ipMissing);
    expect(tooSoon.floorMs).toBeGreaterThanOrEqual(15_000);
    const res = await enter(b, product, missing, ipMissing, tooSoon.header);
    expect(await problem(res)).toEqual({ status: 425, code: 'challenge-too-soon' });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await entries()).toBe(0);

    const solved = await answer(b, product, good, ipGood);
    expect(solved.floorMs).toBe(0);
    expect((await enter(a, product, good, ipGood, solved.header)).status).toBe(201);
    expect(await entries()).toBe(1);
    expect(await problem(await enter(b, product, good, ipGood, solved.header))).toEqual({
      status: 409,
      code: 'challenge-replayed',
    });
    expect(await entries()).toBe(1);

    // E: the two identities that tried; each was refused once at least (a missing, wrong, early
    // or replayed answer), so the challenge rule flags both
    const report = await waitFor(
      'two identities noted',
      async () => {
        const r = await fetch(`${a.url}/admin/products/${product}/fairness`, { headers: admin });
        const body = (await r.json()) as { identities: number; flaggedByRule: unknown };
        return body.identities === 2 && body;
      },
      10_000,
    );
    expect(report).toMatchObject({
      identities: 2,
      flagged: 2,
      flaggedByRule: { block: 0, fingerprint: 0, challenge: 2 },
    });
  });
});
