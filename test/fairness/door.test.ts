/**
 * The door (docs/fairness.md) through the real API, two API processes, Redis (standalone and
 * Cluster) and PostgreSQL: a proof of work refused missing, wrong, foreign, replayed, early or
 * expired (with its problem, and no place written); a flagged identity's floor held by another
 * process; a flagged address given one challenge per floor; a Turnstile token checked against a
 * local server speaking siteverify; and a sale's fairness report, figure by figure.
 */
import { createServer, type Server } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DoorStore } from '../../src/access/index.js';
import {
  ChallengeGate,
  addressBlock,
  rulesHash,
  rulesText,
  defaultRules,
} from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const ROOM = `${ns.id}-room`;
const PLAIN = `${ns.id}-plain`;
const FAIR = `${ns.id}-fair`;
let a: RunningApp;
let b: RunningApp;
let c: RunningApp;
let provider: Server;
/** what the local siteverify server was sent */
const verified: Array<Record<string, string>> = [];

const base = {
  TRUST_PROXY: 'true',
  SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
  RATE_LIMIT_USER: 'off',
  CHALLENGE_PRODUCTS: `${ROOM},${PLAIN}`,
  CHALLENGE_SECRET: 'a-challenge-secret-0123456789',
  CHALLENGE_CLEAN_FLOOR_MS: '500',
};

beforeAll(async () => {
  const used = new Set<string>();
  provider = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(body));
      verified.push(form);
      const token = form.response ?? '';
      const answer =
        form.secret !== base.CHALLENGE_SECRET || !token.startsWith('good')
          ? { success: false, 'error-codes': ['invalid-input-response'] }
          : used.has(token)
            ? { success: false, 'error-codes': ['timeout-or-duplicate'] }
            : { success: true, 'error-codes': [], cdata: token.split(':')[1] ?? '' };
      used.add(token);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  const port = (provider.address() as AddressInfo).port;
  a = await startApp(ns.config({ ...base, CHALLENGE: 'pow' }), { worker: true });
  // another process whose rules differ: it judges the next sale, not this one
  b = await startApp(ns.config({ ...base, CHALLENGE: 'pow', FAIRNESS_IDENTITIES_PER_BLOCK: '10' }));
  c = await startApp(
    ns.config({
      ...base,
      CHALLENGE: 'turnstile',
      CHALLENGE_VERIFY_URL: `http://127.0.0.1:${port}/turnstile/v0/siteverify`,
    }),
  );
  const startsAt = new Date(Date.now() + 3_600_000).toISOString();
  const room = { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 };
  await seed(ROOM, { total: 10, waitingRoom: room, startsAt });
  await seed(PLAIN, { total: 10, requireSaleToken: true });
  await seed(FAIR, { total: 10, requireSaleToken: true });
});
afterAll(async () => {
  await c?.close();
  await b?.close();
  await a?.close();
  await new Promise((r) => provider?.close(r));
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newUser = () => `u${randomBytes(5).toString('hex')}`;
const newIp = () => `10.${[1, 2, 3].map(() => 1 + Math.floor(Math.random() * 250)).join('.')}`;

async function seed(productId: string, body: Record<string, unknown>) {
  const res = await fetch(`${a.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ strategy: 'segmented', segments: 2, limitPerUser: 1, ...body }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

const who = (user: string, ip: string, extra: Record<string, string> = {}) => ({
  'x-user-id': user,
  'x-forwarded-for': ip,
  ...extra,
});

function join(app: RunningApp, user: string, ip: string, challenge?: string) {
  return fetch(`${app.url}/products/${ROOM}/queue`, {
    method: 'POST',
    headers: who(user, ip, challenge === undefined ? {} : { challenge }),
  });
}

interface PowChallenge {
  kind: 'pow';
  algorithm: string;
  challenge: string;
  maxnumber: number;
  salt: string;
  signature: string;
  floorMs: number;
  answerAfter: string;
}

async function challengeFor(app: RunningApp, productId: string, user: string, ip: string) {
  const res = await fetch(`${app.url}/products/${productId}/challenge`, { headers: who(user, ip) });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as PowChallenge;
}

/**
 * Solves a proof of work as a native solver would (node:crypto, synchronously: the floor, not
 * the hashing, is the price); the payload the Challenge header carries.
 */
async function solve(c: PowChallenge, tamper = 0): Promise<string> {
  let number = 0;
  while (createHash('sha256').update(`${c.salt}${number}`).digest('hex') !== c.challenge) {
    number++;
    expect(number).toBeLessThanOrEqual(c.maxnumber);
  }
  const { algorithm, challenge, salt, signature } = c;
  const payload = { algorithm, challenge, number: number + tamper, salt, signature };
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}

async function problem(res: Response) {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { type: string };
  return { status: res.status, code: body.type.replace('urn:seckill:problem:', '') };
}

const placesHeld = () => a.rt.redis.hlen(a.rt.keys.room(ROOM, 1).places);

describe('a proof of work at the door', () => {
  it('refuses a missing, wrong, foreign or replayed answer with its problem, writing no place', async () => {
    const before = await placesHeld();
    const [u1, u2, u3] = [newUser(), newUser(), newUser()];
    expect(await problem(await join(a, u1, newIp()))).toEqual({
      status: 403,
      code: 'challenge-required',
    });
    expect(await problem(await join(a, u1, newIp(), 'not-base64-json'))).toEqual({
      status: 403,
      code: 'challenge-invalid',
    });
    const ip2 = newIp();
    const issued = await challengeFor(a, ROOM, u2, ip2);
    expect(issued.floorMs).toBe(500);
    expect(await problem(await join(a, u2, ip2, await solve(issued, 1)))).toEqual({
      status: 403,
      code: 'challenge-invalid',
    });
    const answer = await solve(issued);
    expect(await problem(await join(b, u3, newIp(), answer))).toEqual({
      status: 403,
      code: 'challenge-foreign',
    });
    expect(await placesHeld()).toBe(before);
    // after its floor (a clean one: 500 ms), the answer is taken once, by either process
    await waitFor(
      'the answer taken after its floor',
      async () => (await join(b, u2, ip2, answer)).status === 200,
      5_000,
    );
    expect(await placesHeld()).toBe(before + 1);
    expect(await problem(await join(b, u2, ip2, answer))).toEqual({
      status: 409,
      code: 'challenge-replayed',
    });
    expect(await placesHeld()).toBe(before + 1);
  });

  it("holds a flagged identity's floor in another process, and gives a flagged address one challenge per floor", async () => {
    const [flagged, neighbour] = [newUser(), newUser()];
    const ip = newIp();
    const sameBlock = ip.replace(/\.\d+$/, '.254');
    expect((await join(a, flagged, ip)).status).toBe(403); // no answer: flagged, with its block
    const asked = Date.now();
    const elapsedS = () => Math.ceil((Date.now() - asked) / 1_000);
    const issued = await challengeFor(a, ROOM, flagged, ip);
    expect(issued.floorMs).toBe(30_000); // the identity's flag and its block's: the second step
    const before = await placesHeld();
    const early = await join(b, flagged, ip, await solve(issued));
    expect(await problem(early)).toEqual({ status: 425, code: 'challenge-too-soon' });
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(30 - elapsedS());
    expect(await placesHeld()).toBe(before);
    // the block is flagged: its next challenge comes a flagged floor (15 s) after the last one
    for (const [app, user] of [
      [b, flagged],
      [a, neighbour],
    ] as const) {
      const res = await fetch(`${app.url}/products/${ROOM}/challenge`, {
        headers: who(user, sameBlock),
      });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(15 - elapsedS());
      expect(await problem(res)).toEqual({ status: 429, code: 'challenge-spaced' });
    }
  });

  it('refuses an expired answer', async () => {
    let now = Date.now();
    const config = a.rt.config.admission.challenge;
    const gate = new ChallengeGate({
      config,
      store: new DoorStore(a.rt.redis, a.rt.keys),
      catalogue: a.rt.inventory.catalogue,
      identitiesPerBlock: 3,
      blockOf: addressBlock,
      now: () => now,
    });
    const user = newUser();
    const ip = newIp();
    const issued = (await gate.issue(ROOM, user, ip)) as PowChallenge;
    now += config.ttlSeconds * 1_000 + 1;
    expect(await gate.check(ROOM, user, ip, await solve(issued))).toMatchObject({
      code: 'challenge-expired',
    });
  });

  it('asks it of a sale token too', async () => {
    const token = (user: string, ip: string, challenge?: string) =>
      fetch(`${a.url}/products/${PLAIN}/sale-token`, {
        method: 'POST',
        headers: who(user, ip, challenge === undefined ? {} : { challenge }),
      });
    expect(await problem(await token(newUser(), newIp()))).toEqual({
      status: 403,
      code: 'challenge-required',
    });
    const user = newUser();
    const ip = newIp();
    const answer = await solve(await challengeFor(a, PLAIN, user, ip));
    await waitFor(
      'a sale token after the floor',
      async () => (await token(user, ip, answer)).status === 201,
      5_000,
    );
    const other = await fetch(`${a.url}/products/${FAIR}/challenge`, { headers: who(user, ip) });
    expect(await problem(other)).toEqual({ status: 409, code: 'no-challenge-needed' });
    const none = await fetch(`${a.url}/products/nope-no-such/challenge`, {
      headers: who(user, ip),
    });
    expect(await problem(none)).toEqual({ status: 404, code: 'unknown-product' });
  });
});

describe('a Turnstile token at the door', () => {
  it("is verified with the provider's siteverify, single use and bound to the shopper", async () => {
    const before = await placesHeld();
    const [user, other] = [newUser(), newUser()];
    const ip = newIp();
    expect((await join(c, user, ip, `good-1:${user}`)).status).toBe(200);
    expect(verified.at(-1)).toEqual({
      secret: base.CHALLENGE_SECRET,
      response: `good-1:${user}`,
      remoteip: ip,
    });
    expect(await problem(await join(c, user, ip, `good-1:${user}`))).toEqual({
      status: 409,
      code: 'challenge-replayed',
    });
    expect(await problem(await join(c, other, ip, `good-2:${user}`))).toEqual({
      status: 403,
      code: 'challenge-foreign',
    });
    expect(await problem(await join(c, other, ip, 'bad'))).toEqual({
      status: 403,
      code: 'challenge-invalid',
    });
    expect(await problem(await join(c, other, ip))).toEqual({
      status: 403,
      code: 'challenge-required',
    });
    expect(await placesHeld()).toBe(before + 1);
  });
});

describe("a sale's fairness report", () => {
  it('counts who tried, who is flagged and what they bought, against a fair draw', async () => {
    const bots = ['b1', 'b2', 'b3', 'b4'].map((n) => `${n}${randomBytes(3).toString('hex')}`);
    const people = Array.from({ length: 6 }, () => newUser());
    const ipOf = new Map([
      ...bots.map((u, i) => [u, `10.9.9.${i + 1}`] as const),
      ...people.map((u, i) => [u, `10.8.${i + 1}.1`] as const),
    ]);
    const tokens = new Map<string, string>();
    for (const u of [...bots, ...people]) {
      const res = await fetch(`${a.url}/products/${FAIR}/sale-token`, {
        method: 'POST',
        headers: who(u, ipOf.get(u)!),
      });
      expect(res.status).toBe(201);
      tokens.set(u, ((await res.json()) as { token: string }).token);
    }
    for (const u of [...bots, ...people.slice(0, 2)]) {
      const res = await fetch(`${a.url}/seckill`, {
        method: 'POST',
        headers: {
          ...who(u, ipOf.get(u)!),
          'sale-token': tokens.get(u)!,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ productId: FAIR }),
      });
      expect(res.status).toBe(202);
    }
    const report = async (app: RunningApp) => {
      const res = await fetch(`${app.url}/admin/products/${FAIR}/fairness`, { headers: admin });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    const seen = await waitFor(
      'ten identities noted and six units persisted',
      async () => {
        const r = await report(a);
        return r.identities === 10 && r.units === 6 && r;
      },
      15_000,
    );
    // mu = 6 * 4 / 10 = 2.4, A = 4 / 2.4; band [1, 4] (test/fairness/figures.test.ts)
    const pinned = rulesHash(rulesText(defaultRules(a.rt.config.admission.fairness)));
    expect(seen).toMatchObject({
      mode: 'plain',
      identities: 10,
      flagged: 4,
      units: 6,
      flaggedUnits: 4,
      fairShare: 2.4,
      band: [1, 4],
      advantage: 1.6667,
      advantageBand: [0.4167, 1.6667],
      top1PercentShare: 0.1667,
      clusters: [{ by: 'address-block', key: '10.9.9.0/24', identities: 4, units: 4 }],
      rulesHash: pinned,
      rulesChanged: false,
      flaggedByRule: { block: 4, fingerprint: 0, challenge: 0 },
    });
    const wrong = await fetch(`${a.url}/admin/products/${FAIR}/fairness`, {
      headers: { authorization: 'Bearer not-the-admin-token-at-all' },
    });
    expect(wrong.status).toBe(403);
    // a process whose rules differ reads the same report: the sale keeps the rules it opened with
    expect(await report(b)).toMatchObject({ rulesHash: pinned, rulesChanged: true, flagged: 4 });
  });
});
