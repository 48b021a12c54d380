/**
 * A sale a failover lost, then cancelled or expired: its return must add nothing (the unit is
 * already back in stock on the new master), be recorded once, and be named by reconciliation.
 * The lost write is made exactly as a failover leaves it: the home segment's state, markers,
 * claims and outbox put back as they were before the deduct, while the order row (its job was on
 * another shard) exists in PostgreSQL. A spill's loss is the segment that gave the unit put back
 * while its home segment, on a master that lived, keeps the buyer's marker.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeSegment } from '../../src/inventory/index.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { expireOrder, returnUnits, sweepPayments } from '../../src/orders/index.js';
import { paymentWindowDeps } from '../../src/composition/roles.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor as waitForMs } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser, paymentClient } from '../support/payments.js';
import { reconcileOver } from '../support/orders.js';

const ns = useNamespace();
const waitFor = <T>(what: string, probe: () => Promise<T>) => waitForMs(what, probe, 20_000);
const SEGMENTS = 4;
let app: RunningApp;

beforeAll(async () => {
  // the sweep is slow here: the test drives returns itself
  app = await startApp(ns.config({ SWEEP_INTERVAL_MS: '60000' }), { worker: true });
});
afterAll(async () => {
  await app?.close();
});

const client = paymentClient(
  () => app.url,
  'a-webhook-secret-long-enough-0123456789',
  ns.adminToken,
);
const { seed, buy, cancel, stateOf } = client;

const rowOf = (orderId: string) =>
  app.rt.db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirst();

/** A user whose home segment is `segment`. */
function userAt(segment: number): string {
  const overdue = deadlineOf(`a user at home on segment ${segment}`, 10_000);
  for (;;) {
    overdue();
    const u = newUser();
    if (homeSegment(u, SEGMENTS) === segment) return u;
  }
}

/**
 * A sale to `user`, once the worker has written its row: reconciliation counts rows, and a
 * purchase is answered before its row exists.
 */
async function buyPersisted(productId: string, user: string): Promise<string> {
  const sold = await buy(productId, user);
  if (!sold.ok) throw new Error(`not sold: ${sold.code}`);
  await waitFor('persisted', async () => (await rowOf(sold.orderId)) !== undefined);
  return sold.orderId;
}

/** The names a failover puts back for segment `segment` (everything a deduct or return writes). */
function segmentNames(productId: string, segment: number): string[] {
  const k = app.rt.keys.segment(productId, segment);
  return [k.state, k.buyers, k.claims, k.outbox, k.returned, k.spilled];
}

/**
 * Sells one unit to `user`, then puts the segment that gave it back as a replica that never
 * received the deduct would hold it: the home segment, or with `spill` the segment a spill took
 * it from (the home segment, keeping its marker, is untouched). Returns the order id (its row
 * persisted).
 */
async function sellThenLose(
  productId: string,
  user: string,
  /** runs before the failover: a return that reached the master, lost with the sale */
  beforeLoss?: (orderId: string) => Promise<unknown>,
  spill = false,
): Promise<string> {
  const home = homeSegment(user, SEGMENTS);
  const redis = app.rt.redis;
  const segments = spill ? [...Array(SEGMENTS).keys()].filter((s) => s !== home) : [home];
  const before = new Map<number, Array<Buffer | null>>();
  for (const seg of segments) {
    before.set(
      seg,
      await Promise.all(segmentNames(productId, seg).map((n) => redis.dumpBuffer(n))),
    );
  }
  const orderId = await buyPersisted(productId, user);
  const seg = (await rowOf(orderId))!.segment;
  expect(seg === home).toBe(!spill);
  const k = app.rt.keys.segment(productId, seg);
  await waitFor('outbox entry gone', async () => (await redis.xlen(k.outbox)) === 0);
  await beforeLoss?.(orderId);
  for (const [i, name] of segmentNames(productId, seg).entries()) {
    const dump = before.get(seg)![i];
    if (dump) await redis.restore(name, 0, dump, 'REPLACE');
    else await redis.del(name);
  }
  return orderId;
}

/**
 * `cancelled` cancelled by `user`, `expired` expired by its job; then both returned again (a
 * redelivered job) and the sweep run.
 */
async function cancelAndExpire(cancelled: string, user: string, expired: string): Promise<void> {
  expect((await cancel(cancelled, user)).status).toBe(200);
  await sql`update orders set pay_by = now() - interval '1 second' where id = ${expired}`.execute(
    app.rt.db,
  );
  const deps = paymentWindowDeps(app.rt);
  expect(await expireOrder(deps, expired)).toBe('closed');
  await returnUnits(deps, (await rowOf(cancelled))!);
  await returnUnits(deps, (await rowOf(expired))!);
  await sweepPayments(deps, 0);
}

describe('a sale a failover lost, then closed', () => {
  it('its cancel or expiry returns nothing, once; reconciliation names it a lost sale closed', async () => {
    const p = newProduct();
    await seed(p, { total: 8, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    const [a, b, c] = [userAt(1), userAt(1), userAt(1)];
    const lostA = await sellThenLose(p, a);
    const lostB = await sellThenLose(p, b);
    // a sale after the failover: the outbox's newest id passes the lost ones, so only the
    // return's own record can name them
    await buyPersisted(p, c);
    expect(await stateOf(p)).toMatchObject({ remaining: 7, sold: 1, returned: 0 });

    await cancelAndExpire(lostA, a, lostB);

    // no unit came from nothing: the failover already put both back
    expect(await stateOf(p)).toMatchObject({ remaining: 7, sold: 1, returned: 0 });
    const k = app.rt.keys.segment(p, 1);
    expect(await app.rt.redis.hgetall(k.returned)).toEqual({ [lostA]: '0', [lostB]: '0' });
    for (const id of [lostA, lostB]) expect((await rowOf(id))!.restocked_at).not.toBeNull();

    const r = (await reconcileOver(app.rt, p))!;
    const named = r.lostWrites
      .map((l) => ({ ...l }))
      .sort((x, y) => (x.orderId < y.orderId ? -1 : 1));
    expect(named).toEqual(
      [lostA, lostB].sort().map((orderId) => ({ orderId, segment: 1, quantity: 1, closed: true })),
    );
    // nothing else: each lost sale is one problem, the units add up around them
    expect(r.problems).toHaveLength(2);
    expect(r.problems.every((t) => t.includes('closed since, its return added nothing'))).toBe(
      true,
    );
    expect(r).toMatchObject({ returned: 0, remaining: 7, persisted: 3 });
  });

  it('a sale whose whole return ran before the failover lost both: named a lost sale closed', async () => {
    const p = newProduct();
    await seed(p, { total: 8, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    const a = userAt(3);
    const lost = await sellThenLose(p, a, async (orderId) => {
      expect((await cancel(orderId, a)).status).toBe(200);
      await waitFor('returned', async () => (await rowOf(orderId))!.restocked_at !== null);
    });
    // the new master: no sale, no return, no marker; PostgreSQL: cancelled, returned. A sale
    // after the failover: only the missing marker and return can name it
    expect((await buy(p, userAt(3))).ok).toBe(true);
    expect(await stateOf(p)).toMatchObject({ remaining: 7, sold: 1, returned: 0 });
    const r = (await reconcileOver(app.rt, p))!;
    expect(r.lostWrites).toEqual([{ orderId: lost, segment: 3, quantity: 1, closed: true }]);
    expect(r.problems).toHaveLength(1);
    expect(r.held.returning).toBe(0);
  });

  it('a sale its segment still holds comes back as before, also from a spill and when retried', async () => {
    const p = newProduct();
    await seed(p, { total: 4, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    const [a, b] = [userAt(2), userAt(2)];
    const home = await buy(p, a);
    // segment 2's one unit is a's: b's purchase spills to another segment
    const spill = await buy(p, b);
    if (!home.ok || !spill.ok) throw new Error('not sold');
    await waitFor('persisted', async () => (await rowOf(spill.orderId)) !== undefined);
    const spillSeg = (await rowOf(spill.orderId))!.segment;
    expect(spillSeg).not.toBe(2);
    // the unit's segment holds the spill until its return, which takes the record out
    const spilled = app.rt.keys.segment(p, spillSeg).spilled;
    expect(await app.rt.redis.hgetall(spilled)).toEqual({ [spill.orderId]: '1' });
    expect((await cancel(home.orderId, a)).status).toBe(200);
    expect((await cancel(spill.orderId, b)).status).toBe(200);
    const deps = paymentWindowDeps(app.rt);
    await returnUnits(deps, (await rowOf(spill.orderId))!);
    expect(await stateOf(p)).toMatchObject({ remaining: 4, sold: 2, returned: 2 });
    expect(await app.rt.redis.exists(spilled)).toBe(0);
    const r = (await reconcileOver(app.rt, p))!;
    expect(r.problems).toEqual([]);
    expect(r.lostWrites).toEqual([]);
  });
});

describe('a lost sale newer than anything its outbox had', () => {
  it('is named and counted in the cut, sold and back in stock: the sums hold around it', async () => {
    const p = newProduct();
    await seed(p, { total: 8, segments: SEGMENTS, limitPerUser: 1 });
    await buyPersisted(p, userAt(1));
    // no sale after the failover: the lost row's outbox id is past its segment's newest one
    const lost = await sellThenLose(p, userAt(1));
    const r = (await reconcileOver(app.rt, p))!;
    expect(r.lostWrites).toEqual([{ orderId: lost, segment: 1, quantity: 1 }]);
    // the only problem is the lost sale: the units and the segment's sums add up around it
    expect(r.problems).toHaveLength(1);
    expect(r).toMatchObject({ afterCut: 0, persisted: 2, remaining: 7 });
    expect(r.held.final).toBe(2);
  });
});

describe('a spill a failover lost on the segment that gave its unit, its home marker kept', () => {
  it('reconciliation names exactly that order; its cancel or expiry adds no unit', async () => {
    const p = newProduct();
    await seed(p, { total: 8, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    // segment 0's two units sold: its next shoppers spill
    for (const u of [userAt(0), userAt(0)]) expect((await buy(p, u)).ok).toBe(true);
    const [a, b] = [userAt(0), userAt(0)];
    const lostA = await sellThenLose(p, a, undefined, true);
    const lostB = await sellThenLose(p, b, undefined, true);
    const segA = (await rowOf(lostA))!.segment;
    const segB = (await rowOf(lostB))!.segment;
    // the home segment still lists both: only the unit's segment can tell
    const home = app.rt.keys.segment(p, 0);
    expect(Object.keys(await app.rt.redis.hgetall(home.buyers))).toHaveLength(4);
    // sales after the failover on the units' segments: their outboxes pass the lost entries
    for (const seg of new Set([segA, segB])) expect((await buy(p, userAt(seg))).ok).toBe(true);
    const soldAfter = new Set([segA, segB]).size;
    expect(await stateOf(p)).toMatchObject({ remaining: 6 - soldAfter, returned: 0 });

    const live = (await reconcileOver(app.rt, p))!;
    const byId = (x: { orderId: string }, y: { orderId: string }) =>
      x.orderId < y.orderId ? -1 : 1;
    expect(live.lostWrites.map((l) => ({ ...l })).sort(byId)).toEqual(
      [
        { orderId: lostA, segment: segA, quantity: 1 },
        { orderId: lostB, segment: segB, quantity: 1 },
      ].sort(byId),
    );
    expect(live.problems).toHaveLength(2);

    await cancelAndExpire(lostA, a, lostB);
    for (const id of [lostA, lostB]) expect((await rowOf(id))!.restocked_at).not.toBeNull();

    // no unit came from nothing: the failover already put both back
    expect(await stateOf(p)).toMatchObject({ remaining: 6 - soldAfter, returned: 0 });
    const r = (await reconcileOver(app.rt, p))!;
    expect(r.lostWrites.map((l) => ({ ...l })).sort(byId)).toEqual(
      [
        { orderId: lostA, segment: segA, quantity: 1, closed: true },
        { orderId: lostB, segment: segB, quantity: 1, closed: true },
      ].sort(byId),
    );
    expect(r.problems).toHaveLength(2);
    expect(r).toMatchObject({ returned: 0, remaining: 6 - soldAfter });
  });

  it('a spill whose return ran before the failover lost both: named a lost sale closed', async () => {
    const p = newProduct();
    await seed(p, { total: 4, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    expect((await buy(p, userAt(3))).ok).toBe(true);
    const a = userAt(3);
    const lost = await sellThenLose(
      p,
      a,
      async (orderId) => {
        expect((await cancel(orderId, a)).status).toBe(200);
        await waitFor('returned', async () => (await rowOf(orderId))!.restocked_at !== null);
      },
      true,
    );
    const seg = (await rowOf(lost))!.segment;
    expect((await buy(p, userAt(seg))).ok).toBe(true);
    expect(await stateOf(p)).toMatchObject({ remaining: 2, returned: 0 });
    const r = (await reconcileOver(app.rt, p))!;
    expect(r.lostWrites).toEqual([{ orderId: lost, segment: seg, quantity: 1, closed: true }]);
    expect(r.problems).toHaveLength(1);
    expect(r.held.returning).toBe(0);
  });
  it('a spill whose home segment lost the marker is a sale: not named, its cancel returns the unit', async () => {
    const p = newProduct();
    await seed(p, { total: 4, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    await buyPersisted(p, userAt(0));
    const a = userAt(0);
    // the home segment (its claim, then its marker) put back as before the sale; the unit's
    // segment, on a master that lived, keeps the sale and its spill record
    const home = segmentNames(p, 0);
    const before = await Promise.all(home.map((n) => app.rt.redis.dumpBuffer(n)));
    const orderId = await buyPersisted(p, a);
    for (const [i, name] of home.entries()) {
      const dump = before[i];
      if (dump) await app.rt.redis.restore(name, 0, dump, 'REPLACE');
      else await app.rt.redis.del(name);
    }
    expect(await stateOf(p)).toMatchObject({ remaining: 2, sold: 2 });
    const r = (await reconcileOver(app.rt, p))!;
    expect(r.lostWrites).toEqual([]);
    expect(r).toMatchObject({ persisted: 2, remaining: 2 });

    expect((await cancel(orderId, a)).status).toBe(200);
    await returnUnits(paymentWindowDeps(app.rt), (await rowOf(orderId))!);
    expect(await stateOf(p)).toMatchObject({ remaining: 3, returned: 1 });
    expect((await reconcileOver(app.rt, p))!.lostWrites).toEqual([]);
  });
});

describe('a sale an older version seeded, still running after the upgrade', () => {
  it('its spills have no record: trusted, not named; a cancel or expiry returns the unit', async () => {
    const p = newProduct();
    await seed(p, { total: 4, segments: SEGMENTS, limitPerUser: 1, payWithinSeconds: 600 });
    const redis = app.rt.redis;
    // the older version's seed left no recordsSpills field
    for (let seg = 0; seg < SEGMENTS; seg++)
      await redis.hdel(app.rt.keys.segment(p, seg).state, STATE_FIELD.recordsSpills);
    await buyPersisted(p, userAt(0));
    const [a, b] = [userAt(0), userAt(0)];
    const spills: string[] = [];
    for (const u of [a, b]) {
      const orderId = await buyPersisted(p, u);
      const seg = (await rowOf(orderId))!.segment;
      expect(seg).not.toBe(0);
      // made by the older version's deduct: no spill record
      expect(await redis.hdel(app.rt.keys.segment(p, seg).spilled, orderId)).toBe(1);
      spills.push(orderId);
    }
    const live = (await reconcileOver(app.rt, p))!;
    expect([live.lostWrites, live.problems]).toEqual([[], []]);

    await cancelAndExpire(spills[0]!, a, spills[1]!);
    expect(await stateOf(p)).toMatchObject({ remaining: 3, sold: 3, returned: 2 });
    const r = (await reconcileOver(app.rt, p))!;
    expect([r.lostWrites, r.problems]).toEqual([[], []]);
    expect(r).toMatchObject({ returned: 2, remaining: 3, persisted: 3 });
  });
});
