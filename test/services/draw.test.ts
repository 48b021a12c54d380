/**
 * The draw through the real API: two API processes (each with its admitter), Redis (standalone
 * and Cluster), PostgreSQL and a local beacon chain of quicknet's scheme (1 s a round). One entry
 * per identity under concurrent entries, nothing accepted after the close, the frozen rows that
 * never change, the verifier's recomputation equal to the service's, forged and wrong-chain
 * beacons refused (the draw waits for a good one), a right unused passed to the next rank, added
 * units going down the waitlist, and a draw that survives its freezing process killed.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Config } from '../../src/config/index.js';
import { leafHash, verifyInclusion } from '../../src/draw/merkle.js';
import { drawOrder } from '../../src/draw/ranks.js';
import { startApp, type RunningApp } from '../support/app.js';
import { startLyingRelay, startTestChain, type TestChain } from '../support/beacon.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
// @ts-expect-error: a plain .mjs file, its types are the test's business
import { verifyTranscript } from '../../examples/verify-draw.mjs';

const ns = useNamespace();
let chain: TestChain;
let a: RunningApp;
let b: RunningApp;
let config: Config;
let env: Record<string, string>;

beforeAll(async () => {
  chain = await startTestChain(1, 1_000);
  env = {
    SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
    ROOM_LEASE_MS: '1000',
    ROOM_TICK_MS: '50',
    // a seat's end is a timer of its own: the slow look must not be what passes a right on
    ROOM_RECHECK_MS: '60000',
    ...chain.env,
  };
  config = ns.config(env);
  a = await startApp(config, { worker: true });
  b = await startApp(config);
});
afterAll(async () => {
  await b?.close();
  await a?.close();
  await chain?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `d${randomBytes(4).toString('hex')}`;
const users = (n: number) =>
  Array.from({ length: n }, (_, i) => `u${i}x${randomBytes(3).toString('hex')}`);
const iso = (ms: number) => new Date(ms).toISOString();

interface Transcript {
  state: string;
  entries: number;
  root: string | null;
  round: number | null;
  frozenAt: string | null;
  beacon: { round: number; randomness: string; signature: string } | null;
  winners: string[];
  waitlist: string[];
  offered: number;
  bought: string[];
  cascade: string | null;
}

interface EntryView {
  entryId: string;
  state: string;
  rank: number | null;
  position: number | null;
  proof: { index: number; size: number; root: string; path: string[] } | null;
  saleToken?: string;
  detail?: string;
}

/** Seeds a draw closing `closeInMs` from now. */
async function seedDraw(
  productId: string,
  o: { total: number; closeInMs: number; buyWithinSeconds?: number; app?: RunningApp } & Record<
    string,
    unknown
  >,
): Promise<{ epoch: number; closeAt: number }> {
  const { total, closeInMs, buyWithinSeconds, app, payWithinSeconds, ...draw } = o;
  const closeAt = Date.now() + closeInMs;
  const res = await fetch(`${(app ?? a).url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({
      total,
      strategy: 'segmented',
      segments: 2,
      ...(payWithinSeconds !== undefined && { payWithinSeconds }),
      draw: {
        entriesOpenAt: iso(Date.now() - 1_000),
        entriesCloseAt: iso(closeAt),
        buyWithinSeconds: buyWithinSeconds ?? 60,
        ...draw,
      },
    }),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return { epoch: ((await res.json()) as { epoch: number }).epoch, closeAt };
}

async function enter(app: RunningApp, productId: string, user: string, method = 'POST') {
  const res = await fetch(`${app.url}/products/${productId}/draw/entry`, {
    method,
    headers: { 'x-user-id': user },
  });
  return { status: res.status, body: (await res.json()) as EntryView & { type?: string } };
}

const entryOf = (app: RunningApp, productId: string, user: string) =>
  enter(app, productId, user, 'GET');

async function transcriptOf(app: RunningApp, productId: string): Promise<Transcript> {
  const res = await fetch(`${app.url}/products/${productId}/draw`);
  expect(res.status).toBe(200);
  return (await res.json()) as Transcript;
}

const drawn = (app: RunningApp, productId: string, timeoutMs = 15_000) =>
  waitFor(
    `the draw of ${productId}`,
    async () => {
      const t = await transcriptOf(app, productId);
      return t.state === 'drawn' && t.offered > 0 && t;
    },
    timeoutMs,
    100,
  );

async function buy(productId: string, user: string, saleToken: string) {
  return (await bought(productId, user, saleToken)).status;
}

async function bought(productId: string, user: string, saleToken?: string) {
  const res = await fetch(`${b.url}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': user,
      ...(saleToken && { 'sale-token': saleToken }),
    },
    body: JSON.stringify({ productId }),
  });
  return { status: res.status, orderId: ((await res.json()) as { orderId?: string }).orderId };
}

/**
 * A window the tests' entries land in before the close, on a loaded machine too (20 entries over
 * HTTP took over a second on the Cluster); the close is waited for, not slept.
 */
const ENTRY_WINDOW_MS = 4_000;

/** Each shopper's entry id, by shopper (entered at once). */
async function entered(productId: string, shoppers: string[]): Promise<Map<string, string>> {
  const answers = await Promise.all(shoppers.map((u) => enter(a, productId, u)));
  expect(answers.map((r) => r.status)).toEqual(shoppers.map(() => 201));
  return new Map(shoppers.map((u, i) => [u, answers[i]!.body.entryId]));
}

describe('a draw', () => {
  it('takes one entry per identity, however many entries come at once', async () => {
    const productId = newProduct();
    await seedDraw(productId, { total: 5, closeInMs: 60_000 });
    const shoppers = users(20);
    const answers = await Promise.all(
      shoppers.flatMap((u) =>
        Array.from({ length: 8 }, (_, i) => enter(i % 2 ? a : b, productId, u)),
      ),
    );
    const byShopper = new Map<string, Set<string>>();
    answers.forEach((r, i) => {
      const u = shoppers[Math.floor(i / 8)]!;
      expect([200, 201]).toContain(r.status);
      byShopper.set(u, (byShopper.get(u) ?? new Set()).add(r.body.entryId));
    });
    expect([...byShopper.values()].map((s) => s.size)).toEqual(shoppers.map(() => 1));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(20);
    expect((await transcriptOf(b, productId)).entries).toBe(20);
    // a withdrawal takes it back; entering again is a new entry
    const [first] = shoppers;
    const out = await enter(b, productId, first!, 'DELETE');
    expect(out.status).toBe(200);
    expect((await transcriptOf(a, productId)).entries).toBe(19);
    expect((await entryOf(a, productId, first!)).status).toBe(404);
  });

  it('accepts nothing after the close, freezes exactly the list, and its rows never change', async () => {
    const productId = newProduct();
    const { epoch, closeAt } = await seedDraw(productId, { total: 2, closeInMs: ENTRY_WINDOW_MS });
    const ids = await entered(productId, users(6));
    const [stays, leaves] = [...ids.keys()];
    await waitFor('the close', async () => Date.now() > closeAt + 100, ENTRY_WINDOW_MS + 5_000, 50);
    const late = await enter(b, productId, `late${randomBytes(3).toString('hex')}`);
    expect([late.status, late.body.type]).toEqual([409, 'urn:seckill:problem:draw-closed']);
    expect((await enter(a, productId, leaves!, 'DELETE')).status).toBe(409);
    // the one who entered before is answered the same entry
    expect(await enter(b, productId, stays!)).toMatchObject({
      status: 200,
      body: { entryId: ids.get(stays!) },
    });
    const frozen = await waitFor(
      'the freeze',
      async () => {
        const t = await transcriptOf(a, productId);
        return t.root !== null && t;
      },
      10_000,
      100,
    );
    expect(frozen.entries).toBe(6);
    expect(Date.parse(frozen.frozenAt!)).toBeGreaterThanOrEqual(closeAt);
    const page = await fetch(`${a.url}/products/${productId}/draw/entries?limit=4`);
    const body = (await page.json()) as { entries: string[]; next: string };
    expect(body.entries).toEqual([...ids.values()].sort().slice(0, 4));
    const rest = await fetch(
      `${a.url}/products/${productId}/draw/entries?format=ndjson&after=${body.next}`,
    );
    expect(
      (await rest.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as string),
    ).toEqual([...ids.values()].sort().slice(4));
    // every entrant's proof holds against the published root
    for (const [u, id] of ids) {
      const { body: e } = await entryOf(b, productId, u);
      const p = e.proof!;
      const path = p.path.map((h) => Buffer.from(h, 'hex'));
      expect(
        verifyInclusion(leafHash(id), p.index, p.size, path, Buffer.from(frozen.root!, 'hex')),
      ).toBe(true);
    }
    // the rows refuse a change, the shop's included
    const db = a.rt.db;
    await expect(
      sql`update draw_entries set entry_id = 'mine' where product_id = ${productId}`.execute(db),
    ).rejects.toThrow(/never changes/);
    await expect(
      sql`update draws set root = 'ff' where product_id = ${productId} and epoch = ${epoch}`.execute(
        db,
      ),
    ).rejects.toThrow(/never changes/);
    await expect(
      sql`delete from draws where product_id = ${productId}`.execute(db),
    ).rejects.toThrow(/never deleted/);
  });

  it('is recomputed by the verifier from its transcript alone: the root, the beacon, every rank', async () => {
    const productId = newProduct();
    await seedDraw(productId, { total: 3, closeInMs: ENTRY_WINDOW_MS });
    const ids = await entered(productId, users(12));
    const t = await drawn(b, productId);
    const all = [...ids.values()];
    expect(t.beacon).toEqual(chain.chain.sign(t.round!));
    expect([...t.winners, ...t.waitlist]).toEqual(drawOrder(all, t.beacon!.randomness));
    expect(t.winners).toHaveLength(3);
    const result = await verifyTranscript(t, { chain: chain.chain.info.hash });
    expect(result.problems).toEqual([]);
    expect(result.signature).toBe('verified');
    // one id changed, one rank swapped, another chain: each is a mismatch
    const swapped = { ...t, winners: [t.winners[1], t.winners[0], ...t.winners.slice(2)] };
    expect(
      (await verifyTranscript(swapped, { chain: chain.chain.info.hash })).problems,
    ).not.toEqual([]);
    const other = { ...t, waitlist: [...t.waitlist.slice(1), 'f'.repeat(32)] };
    expect((await verifyTranscript(other, { chain: chain.chain.info.hash })).problems).not.toEqual(
      [],
    );
    expect((await verifyTranscript(t, {})).problems.join()).toMatch(/not drand's quicknet/);
  });
});

/** The entrants by rank (1 first), from a drawn transcript. */
function byRank(t: Transcript, ids: Map<string, string>): string[] {
  const shopperOf = new Map([...ids].map(([u, id]) => [id, u]));
  return [...t.winners, ...t.waitlist].map((id) => shopperOf.get(id)!);
}

const wonBy = (productId: string, user: string, timeoutMs = 15_000) =>
  waitFor(
    `${user} won`,
    async () => {
      const { body } = await entryOf(a, productId, user);
      return body.state === 'won' && body;
    },
    timeoutMs,
    100,
  );

describe("a draw's limits", () => {
  it('limits entries per shopper and reads per client address, as the room limits joins and polls', async () => {
    const limited = await startApp(
      ns.config({
        ...env,
        RATE_LIMIT_USER: '1/m',
        RATE_LIMIT_USER_BURST: '2',
        RATE_LIMIT_POLL_IP: '2/m',
      }),
    );
    onTestFinished(() => limited.close());
    const productId = newProduct();
    await seedDraw(productId, { total: 1, closeInMs: 60_000 });
    const [u] = users(1);
    const tries = [];
    for (let i = 0; i < 3; i++) tries.push(await enter(limited, productId, u!));
    expect(tries.map((r) => r.status)).toEqual([201, 200, 429]);
    expect((await enter(limited, productId, u!, 'DELETE')).status).toBe(429);
    const reads = [];
    for (let i = 0; i < 3; i++) reads.push((await entryOf(limited, productId, u!)).status);
    expect(reads).toEqual([200, 200, 429]);
  });
});

describe("a draw's cascade", () => {
  it("passes a right not used in time to the next rank at the right's end", async () => {
    const productId = newProduct();
    await seedDraw(productId, { total: 2, closeInMs: ENTRY_WINDOW_MS, buyWithinSeconds: 5 });
    const ids = await entered(productId, users(5));
    const t = await drawn(a, productId);
    const ranked = byRank(t, ids);
    const first = await wonBy(productId, ranked[0]!);
    expect(await buy(productId, ranked[0]!, first.saleToken!)).toBe(202);
    expect((await entryOf(a, productId, ranked[1]!)).body.state).toBe('won');
    expect((await entryOf(b, productId, ranked[2]!)).body).toMatchObject({
      state: 'waitlisted',
      position: 1,
      pollAfterSeconds: 1, // the next in line asks a second apart
    });
    expect((await entryOf(b, productId, ranked[4]!)).body).toMatchObject({
      state: 'waitlisted',
      position: 3,
      pollAfterSeconds: 3,
    });
    // rank 2 does not buy: at its right's end (5 s; the slow look is a minute away) rank 3 wins
    const third = await wonBy(productId, ranked[2]!);
    expect(third.rank).toBe(3);
    expect((await entryOf(b, productId, ranked[1]!)).body.state).toBe('expired');
    expect((await entryOf(b, productId, ranked[3]!)).body).toMatchObject({
      state: 'waitlisted',
      position: 1,
    });
    expect(await buy(productId, ranked[2]!, third.saleToken!)).toBe(202);
    const after = await waitFor(
      'both bought',
      async () => {
        const now = await transcriptOf(a, productId);
        return now.bought.length === 2 && now;
      },
      10_000,
      100,
    );
    expect(after.offered).toBe(3);
    expect(after.bought).toEqual([ids.get(ranked[0]!), ids.get(ranked[2]!)]);
    expect((await verifyTranscript(after, { chain: chain.chain.info.hash })).problems).toEqual([]);
    // the shop is told on the feed, in its subject's order: frozen, drawn, each right, the pass
    // (the cascade is a room, so its places' own events, room.*, ride beside these)
    const told = await waitFor(
      "the draw's events",
      async () => {
        const { rows } = await sql<{ sequence: number; type: string; data: { rank?: number } }>`
          select sequence, type, data from product_events where product_id = ${productId}
          and source = '/seckill/draws' order by sequence`.execute(a.rt.db);
        return rows.length >= 6 && rows;
      },
      10_000,
      100,
    );
    expect(told.map((e) => [e.sequence, e.type, e.data.rank ?? null])).toEqual([
      [1, 'draw.frozen', null],
      [2, 'draw.drawn', null],
      [3, 'draw.won', 1],
      [4, 'draw.won', 2],
      [5, 'draw.passed-on', 3],
      [6, 'draw.won', 3],
    ]);
  });

  it('sends units added after the draw down the waitlist, in rank order', async () => {
    const productId = newProduct();
    await seedDraw(productId, { total: 2, closeInMs: ENTRY_WINDOW_MS });
    const ids = await entered(productId, users(6));
    const ranked = byRank(await drawn(a, productId), ids);
    for (const u of ranked.slice(0, 2)) {
      expect(await buy(productId, u, (await wonBy(productId, u)).saleToken!)).toBe(202);
    }
    // sold out for good (no payment window): the rest are told so, until units come
    await waitFor(
      'sold out heard',
      async () => (await entryOf(a, productId, ranked[2]!)).body.state === 'not-drawn',
      5_000,
      50,
    );
    const res = await fetch(`${a.url}/admin/products/${productId}/units`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ add: 2 }),
    });
    expect(res.status).toBe(200);
    for (const u of ranked.slice(2, 4)) await wonBy(productId, u);
    expect((await entryOf(b, productId, ranked[4]!)).body).toMatchObject({
      state: 'waitlisted',
      position: 1,
    });
    expect((await transcriptOf(b, productId)).offered).toBe(4);
  });
});

async function control(productId: string, action: string, body?: unknown) {
  const res = await fetch(`${a.url}/admin/products/${productId}/${action}`, {
    method: 'POST',
    headers: admin,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return res.status;
}

/** Both processes' transcripts tell the cascade's state (each heard the operator's change). */
const cascadeIs = (productId: string, cascade: string) =>
  waitFor(
    `the cascade ${cascade} on both`,
    async () => {
      const both = await Promise.all([a, b].map((p) => transcriptOf(p, productId)));
      return both.every((t) => t.cascade === cascade) && both[0]!;
    },
    10_000,
    50,
  );

describe("a draw's operator", () => {
  it('a winner the admitter has not reached reads waitlisted, told when its right comes', async () => {
    const productId = newProduct();
    await seedDraw(productId, { total: 2, closeInMs: ENTRY_WINDOW_MS });
    const ids = await entered(productId, users(3));
    // paused before the draw: the draw is made, the admitter hands no right until the resume
    expect(await control(productId, 'pause')).toBe(200);
    const t = await waitFor(
      `the draw of ${productId}, paused`,
      async () => {
        const t = await transcriptOf(a, productId);
        return t.state === 'drawn' && t;
      },
      15_000,
      100,
    );
    expect(t.offered).toBe(0);
    const ranked = byRank(t, ids);
    const first = (await entryOf(b, productId, ranked[0]!)).body;
    expect(first).toMatchObject({ state: 'waitlisted', rank: 1, position: 1 });
    expect(first.detail).toBe(
      'drawn among the 2 winners: your purchase right comes when the shop resumes the sale',
    );
    const third = (await entryOf(b, productId, ranked[2]!)).body;
    expect(third).toMatchObject({ state: 'waitlisted', rank: 3, position: 3 });
    expect(third.detail).toBeUndefined();
    expect(await control(productId, 'resume')).toBe(200);
    // a purchase or a sale token asked without the entry's token: the answer names the entry
    const headers = { 'content-type': 'application/json', 'x-user-id': ranked[0]! };
    for (const [path, body] of [
      ['/seckill', { productId }],
      [`/products/${productId}/sale-token`, {}],
    ] as const) {
      const res = await fetch(`${b.url}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { detail: string }).detail).toBe(
        `this sale is a draw: a winner buys with the Sale-Token its entry gives (GET /products/${productId}/draw/entry)`,
      );
    }
    expect((await wonBy(productId, ranked[0]!)).rank).toBe(1);
    expect((await wonBy(productId, ranked[1]!)).rank).toBe(2);
  });

  it('pauses the cascade (added units wait), resumes it in rank order, ends it; each audited', async () => {
    const productId = newProduct();
    const { epoch } = await seedDraw(productId, { total: 2, closeInMs: ENTRY_WINDOW_MS });
    const ids = await entered(productId, users(6));
    const t = await drawn(a, productId);
    expect(t.cascade).toBe('running');
    const ranked = byRank(t, ids);
    for (const u of ranked.slice(0, 2)) await wonBy(productId, u);

    expect(await control(productId, 'pause')).toBe(200);
    await cascadeIs(productId, 'paused');
    // two units come back while paused (a paused room sleeps: no tick to count): nobody further
    // is offered one until the resume, which the rights' times below prove
    expect(await control(productId, 'units', { add: 2 })).toBe(200);
    expect((await transcriptOf(b, productId)).offered).toBe(2);
    expect((await entryOf(b, productId, ranked[2]!)).body).toMatchObject({
      state: 'waitlisted',
      position: 1,
    });

    const resumedAt = Date.now();
    expect(await control(productId, 'resume')).toBe(200);
    const third = await wonBy(productId, ranked[2]!);
    const fourth = await wonBy(productId, ranked[3]!);
    expect([third.rank, fourth.rank]).toEqual([3, 4]);
    const admitted = await a.rt.redis.hgetall(a.rt.keys.room(productId, epoch).admitted);
    const at = ranked.slice(0, 4).map((u) => Number(admitted[u]));
    expect([...at].sort((x, y) => x - y)).toEqual(at);
    expect(at.slice(2).every((ms) => ms >= resumedAt)).toBe(true);
    expect((await entryOf(b, productId, ranked[4]!)).body).toMatchObject({
      state: 'waitlisted',
      position: 1,
    });

    // ended: the transcript says so, a unit added after it goes to nobody, rank 5 is not drawn
    expect(await control(productId, 'end')).toBe(200);
    const ended = await cascadeIs(productId, 'ended');
    expect(ended.offered).toBe(4);
    expect(await control(productId, 'units', { add: 1 })).toBe(409);
    expect((await transcriptOf(a, productId)).offered).toBe(4);
    expect((await entryOf(a, productId, ranked[4]!)).body.state).toBe('not-drawn');
    expect((await verifyTranscript(ended, { chain: chain.chain.info.hash })).problems).toEqual([]);

    const res = await fetch(`${a.url}/admin/audit?productId=${productId}`, { headers: admin });
    const { entries } = (await res.json()) as {
      entries: Array<{ action: string; outcome: string }>;
    };
    expect(entries.reverse().map((e) => `${e.action}:${e.outcome}`)).toEqual([
      'seed:done',
      'pause:done',
      'units:done',
      'resume:done',
      'end:done',
      'units:refused',
    ]);
  });
});

/** The order's row once persisted (its draw columns), and what GET /orders/:id answers. */
async function persisted(orderId: string, user: string) {
  const row = await waitFor(
    `order ${orderId} persisted`,
    () =>
      a.rt.db
        .selectFrom('orders')
        .select(['id', 'status', 'draw_entry_id', 'draw_rank'])
        .where('id', '=', orderId)
        .executeTakeFirst(),
    10_000,
    50,
  );
  const res = await fetch(`${a.url}/orders/${orderId}`, { headers: { 'x-user-id': user } });
  expect(res.status).toBe(200);
  return { row, view: (await res.json()) as { entryId?: string; rank?: number } };
}

describe("a draw's orders", () => {
  it('carry the entry and its rank, on the row, the answer and the events; reconcile counts them', async () => {
    const productId = newProduct();
    await seedDraw(productId, { total: 2, closeInMs: ENTRY_WINDOW_MS, payWithinSeconds: 600 });
    const ids = await entered(productId, users(5));
    const t = await drawn(a, productId);
    const ranked = byRank(t, ids);
    const orders: Array<{ user: string; orderId: string }> = [];
    for (const u of ranked.slice(0, 2)) {
      const r = await bought(productId, u, (await wonBy(productId, u)).saleToken);
      expect(r.status).toBe(202);
      orders.push({ user: u, orderId: r.orderId! });
    }
    // rank 1 cancels in its payment window: its unit passes down the waitlist to rank 3
    await persisted(orders[0]!.orderId, ranked[0]!);
    const cancel = await fetch(`${a.url}/orders/${orders[0]!.orderId}/cancel`, {
      method: 'POST',
      headers: { 'x-user-id': ranked[0]! },
    });
    expect(cancel.status).toBe(200);
    const third = await wonBy(productId, ranked[2]!);
    expect(third.rank).toBe(3);
    const r3 = await bought(productId, ranked[2]!, third.saleToken);
    expect(r3.status).toBe(202);
    orders.push({ user: ranked[2]!, orderId: r3.orderId! });
    const ranks = [1, 2, 3];
    for (const [i, o] of orders.entries()) {
      const { row, view } = await persisted(o.orderId, o.user);
      const entryId = ids.get(o.user)!;
      expect([row.draw_entry_id, row.draw_rank]).toEqual([entryId, ranks[i]]);
      expect([view.entryId, view.rank]).toEqual([entryId, ranks[i]]);
      expect([...t.winners, ...t.waitlist][ranks[i]! - 1]).toBe(entryId);
    }
    // every order event of theirs carries the same (created, then rank 1's cancel and return)
    const { rows: events } = await sql<{
      order_id: string;
      type: string;
      data: { entryId?: string; rank?: number };
    }>`
      select order_id, type, data from order_events
      where order_id = any(${orders.map((o) => o.orderId)}::uuid[]) order by txid, position`.execute(
      a.rt.db,
    );
    expect(events.map((e) => e.type).sort()).toEqual(
      [
        'order.created',
        'order.created',
        'order.created',
        'order.cancelled',
        'order.returned',
      ].sort(),
    );
    for (const e of events) {
      const i = orders.findIndex((o) => o.orderId === e.order_id);
      expect([e.data.entryId, e.data.rank], e.type).toEqual([ids.get(orders[i]!.user), ranks[i]]);
    }
    // sold + left = seeded, the unit that came back and went down the waitlist included
    const report = await fetch(`${b.url}/admin/products/${productId}/reconcile`, {
      method: 'POST',
      headers: admin,
    });
    expect(report.status).toBe(200);
    expect(await report.json()).toMatchObject({
      ok: true,
      problems: [],
      seeded: 2,
      remaining: 0,
      pending: 0,
      persisted: 3,
      persistedOrders: 3,
      returned: 1,
    });
    // a plain sale's order names no entry
    const plain = newProduct();
    const seeded = await fetch(`${a.url}/admin/products/${plain}`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ total: 1, strategy: 'segmented', segments: 2 }),
    });
    expect(seeded.status).toBe(201);
    const [shopper] = users(1);
    const p = await bought(plain, shopper!);
    expect(p.status).toBe(202);
    const { row, view } = await persisted(p.orderId!, shopper!);
    expect([row.draw_entry_id, row.draw_rank, 'entryId' in view, 'rank' in view]).toEqual([
      null,
      null,
      false,
      false,
    ]);
  });
});

describe("a draw's beacon", () => {
  it('is refused when forged or of another chain, and the draw waits for a good one', async () => {
    const forged = await startLyingRelay(chain.chain, 'forged');
    const otherChain = await startLyingRelay(chain.chain, 'other-chain');
    onTestFinished(() => forged.close());
    onTestFinished(() => otherChain.close());
    const lying = ns.config({ ...env, DRAW_BEACON_URLS: `${forged.url},${otherChain.url}` });
    // this process alone draws: the others' admitters stop
    await a.services.roomAdmitter.stop();
    await b.services.roomAdmitter.stop();
    const c = await startApp(lying);
    onTestFinished(() => c.close());
    const productId = newProduct();
    await seedDraw(productId, { total: 1, closeInMs: ENTRY_WINDOW_MS, app: c });
    await entered(productId, users(3));
    const frozen = await waitFor(
      'the freeze',
      async () => (await transcriptOf(c, productId)).round,
      10_000,
      100,
    );
    await waitFor(
      'refusals from both relays',
      async () => forged.state.asked >= 2 && otherChain.state.asked >= 2,
      15_000,
      100,
    );
    expect((await transcriptOf(c, productId)).state).toBe('frozen');
    const metrics = await (await fetch(`${c.url}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(`seckill_draw_beacon_refusals_total\\{product="${productId}"\\} [2-9]`),
    );
    // a relay that tells the truth: drawn with the chain's round, the one frozen
    otherChain.state.mode = 'honest';
    const t = await drawn(c, productId);
    expect(t.round).toBe(frozen);
    expect(t.beacon).toEqual(chain.chain.sign(frozen!));
  });
});

describe('a draw whose process dies', () => {
  it('is drawn by another between its freeze and its round: the same beacon, the same winners', async () => {
    const slow = ns.config({ ...env, DRAW_BEACON_MARGIN_MS: '4000' });
    // the file's processes admit nothing here (stopped by the test above, or now)
    await Promise.all([a, b].map((p) => p.services.roomAdmitter.stop().catch(() => undefined)));
    const c = await startApp(slow);
    onTestFinished(() => c.close().catch(() => undefined));
    const productId = newProduct();
    await seedDraw(productId, { total: 4, closeInMs: ENTRY_WINDOW_MS, app: c });
    const ids = await entered(productId, users(20));
    const frozen = await waitFor(
      'the freeze',
      async () => {
        const t = await transcriptOf(c, productId);
        return t.state === 'frozen' && t;
      },
      10_000,
      50,
    );
    // killed before its round: its admitter leaves its lease to run out, its process goes
    await c.services.roomAdmitter.stop({ release: false });
    await c.close();
    const d = await startApp(slow);
    onTestFinished(() => d.close());
    const t = await drawn(d, productId, 20_000);
    expect([t.round, t.frozenAt, t.root]).toEqual([frozen.round, frozen.frozenAt, frozen.root]);
    expect(t.beacon).toEqual(chain.chain.sign(frozen.round!));
    const order = drawOrder([...ids.values()], t.beacon!.randomness);
    expect([t.winners, t.waitlist]).toEqual([order.slice(0, 4), order.slice(4)]);
    expect((await verifyTranscript(t, { chain: chain.chain.info.hash })).problems).toEqual([]);
  });
});
