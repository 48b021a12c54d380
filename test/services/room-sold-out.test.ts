/**
 * "Sold out while you waited" (src/inventory/rooms/sold-out-walk.ts, lua/roomSoldOut-2.lua):
 * once a room's product is sold out for good, every shopper still waiting gets one `room.sold-out`
 * event, those admitted or passed over none; through two API processes on one Redis and on the
 * Cluster. The walk's batches: a second pass writes none, and a holder killed between writing a
 * batch and naming it loses none and duplicates none (the next holder writes it again: skipped).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishProductEvents } from '../../src/events/index.js';
import {
  RoomStore,
  walkSoldOut,
  type ProductView,
  type SoldOutShopper,
} from '../../src/inventory/index.js';
import { ROOM_FIELD } from '../../src/inventory/records/hash-fields.js';
import { ROOM_EVENT_SOURCE, soldOutEventsOf } from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { seedSale } from '../support/factories.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
let a: RunningApp;
let b: RunningApp;

beforeAll(async () => {
  const config = ns.config({
    SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
    ROOM_LEASE_MS: '1000',
    ROOM_TICK_MS: '50',
    ROOM_RECHECK_MS: '500',
    LOG_LEVEL: process.env.DEBUG_LOG ?? 'silent',
  });
  a = await startApp(config, { worker: true });
  b = await startApp(config);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

const newProduct = () => `p${randomBytes(4).toString('hex')}`;
const users = (n: number) =>
  Array.from({ length: n }, (_, i) => `u${i}x${randomBytes(3).toString('hex')}`);
const keysOf = (productId: string, epoch: number) => a.rt.keys.room(productId, epoch);

async function join(app: RunningApp, productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    method: 'POST',
    headers: { 'x-user-id': user },
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function poll(app: RunningApp, productId: string, user: string) {
  const res = await fetch(`${app.url}/products/${productId}/queue`, {
    headers: { 'x-user-id': user },
  });
  return (await res.json()) as { state: string; saleToken?: string; final?: boolean };
}

const tokenOf = (productId: string, user: string) =>
  waitFor(
    `${user}'s admission`,
    async () => {
      const r = await poll(b, productId, user);
      return r.state === 'admitted' && r.saleToken;
    },
    15_000,
    50,
  );

async function buy(productId: string, user: string, saleToken: string) {
  const overdue = deadlineOf(`an answer but 503 for ${user}`, 30_000);
  for (;;) {
    overdue();
    const res = await fetch(`${a.url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': user, 'sale-token': saleToken },
      body: JSON.stringify({ productId, quantity: 1 }),
    });
    if (res.status !== 503) return res.status;
  }
}

/** Each shopper's ticket, and who holds each ticket (1-based: `byTicket[t]`). */
async function line(productId: string, epoch: number) {
  const places = await a.rt.redis.hgetall(keysOf(productId, epoch).places);
  const byTicket: string[] = [];
  for (const [u, t] of Object.entries(places)) byTicket[Number(t)] = u;
  return byTicket;
}

/** The `room.sold-out` events of a product in the feed: shopper -> data. */
async function soldOutEvents(productId: string) {
  const rows = await a.rt.db
    .selectFrom('product_events')
    .select(['id', 'subject', 'data', 'sequence'])
    .where('product_id', '=', productId)
    .where('type', '=', 'room.sold-out')
    .execute();
  return rows;
}

describe('sold out while waiting', () => {
  it('tells every shopper still waiting once, and nobody admitted or passed over', async () => {
    const productId = newProduct();
    // 3 units, 1 a shopper: 3 seats; an admission lasts 5 s (the first admitted never buys)
    const { epoch } = await seedSale(a.url, productId, {
      total: 3,
      limitPerUser: 1,
      strategy: 'segmented',
      segments: 2,
      startsAt: new Date(Date.now() + 2_500).toISOString(),
      waitingRoom: { admitPerSecond: 20, maxActive: 10, admittedForSeconds: 5 },
    });
    // 12 in the lobby, on either process: shuffled at the opening
    for (const [i, u] of users(12).entries()) await join(i % 2 ? a : b, productId, u);
    const t = await waitFor(
      'the shuffled line',
      async () => {
        const byTicket = await line(productId, epoch);
        return byTicket.filter(Boolean).length === 12 && byTicket;
      },
      10_000,
      50,
    );
    // tickets 2 and 3 buy; ticket 1 lets the turn run out (passed over), then ticket 4 buys
    for (const ticket of [2, 3]) {
      expect(await buy(productId, t[ticket]!, await tokenOf(productId, t[ticket]!))).toBe(202);
    }
    expect(await buy(productId, t[4]!, await tokenOf(productId, t[4]!))).toBe(202);
    // ticket 1 was admitted, and its turn ran out unused (no seat any more)
    const k = keysOf(productId, epoch);
    expect(await a.rt.redis.hexists(k.admitted, t[1]!)).toBe(1);
    expect(await a.rt.redis.zscore(k.active, t[1]!)).toBeNull();
    const waiting = t.slice(5, 13);
    const events = await waitFor(
      () => `8 room.sold-out events of ${productId}`,
      async () => {
        const rows = await soldOutEvents(productId);
        return rows.length >= 8 && rows;
      },
      15_000,
      50,
    );
    expect(events.map((e) => e.subject).sort()).toEqual(
      waiting.map((u) => `${productId}/places/${u}`).sort(),
    );
    // each with the place it had: 1 for ticket 5 (4 served) to 8 for ticket 12
    const placeOf = new Map(events.map((e) => [e.subject, e.data as Record<string, unknown>]));
    expect(waiting.map((u) => placeOf.get(`${productId}/places/${u}`)?.position)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8,
    ]);
    expect(events.map((e) => e.id).sort()).toEqual(
      waiting.map((u) => `room.sold-out:${productId}:${epoch}:${u}`).sort(),
    );
    // the page says the same: sold out for good
    expect(await poll(a, productId, waiting[0]!)).toMatchObject({ state: 'sold-out', final: true });
    // the walk's end is kept: the holders' next ticks, and another pass, write nothing more
    expect(await a.rt.redis.hget(k.room, ROOM_FIELD.soldOutTo)).toBe('12');
    const fence = Number(await a.rt.redis.hget(k.room, ROOM_FIELD.admitterFence));
    const told: SoldOutShopper[][] = [];
    const view = { id: productId, epoch, soldOutAt: Date.now() } as ProductView;
    const again = await walkSoldOut(
      {
        store: new RoomStore(a.rt.redis, a.rt.keys),
        onSoldOut: async (_, s) => void told.push(s),
        stopped: () => false,
      },
      view,
      { fence, signal: new AbortController().signal },
    );
    expect([again, told]).toEqual([{ code: 'done', to: 12 }, []]);
    // the same events published again (a takeover's repeat) are skipped by their ids
    const shoppers = waiting.map((userId, i) => ({ userId, ticket: i + 5, position: i + 1 }));
    expect(
      await publishProductEvents(a.rt.db, ROOM_EVENT_SOURCE, soldOutEventsOf(view, shoppers)),
    ).toBe(0);
    expect((await soldOutEvents(productId)).length).toBe(8);
  });

  it('survives its holder killed midway: the next holder finishes, none lost, none twice', async () => {
    // a room only these calls tick (no product seeded: the processes' admitters never see it)
    const productId = newProduct();
    const store = new RoomStore(a.rt.redis, a.rt.keys);
    const sale = { epoch: 1, endsAt: 0 };
    const arrivals = users(10);
    for (const u of arrivals) await store.join(productId, sale, u, 100);
    const tick = (fence: number, unitsLeft: number) =>
      store.admit(
        productId,
        {
          epoch: 1,
          fence,
          startsAt: 0,
          endsAt: 0,
          seed: 7,
          settings: { admitPerSecond: 100, maxActive: 100, admittedForSeconds: 60 },
          soldOut: unitsLeft === 0,
          unitsLeft,
          limitPerUser: 1,
          doneAtRead: 0,
        },
        false,
      );
    // the opening: the lobby shuffled, 2 admitted (2 units); then sold out, 8 waiting
    expect(await tick(1, 2)).toMatchObject({ code: 'ticked', served: 2, next: 10 });
    expect(await tick(1, 0)).toMatchObject({ code: 'ticked', served: 2, admitted: 0 });
    const t = await line(productId, 1);
    const view = { id: productId, epoch: 1, soldOutAt: Date.now() } as ProductView;
    const written: number[] = [];
    const publish = async (shoppers: SoldOutShopper[]) => {
      written.push(
        await publishProductEvents(a.rt.db, ROOM_EVENT_SOURCE, soldOutEventsOf(view, shoppers)),
      );
    };
    // the first holder writes its second batch and dies before naming it
    let batches = 0;
    const killed = walkSoldOut(
      {
        store,
        soldOutBatch: 3,
        stopped: () => false,
        onSoldOut: async (_, shoppers) => {
          await publish(shoppers);
          if (++batches === 2) throw new Error('killed');
        },
      },
      view,
      { fence: 1, signal: new AbortController().signal },
    );
    await expect(killed).rejects.toThrow('killed');
    expect(written).toEqual([3, 3]);
    expect(await a.rt.redis.hget(keysOf(productId, 1).room, ROOM_FIELD.soldOutTo)).toBe('5');
    // the next holder's lease, and its first tick, fence the dead one out
    expect(await tick(2, 0)).toMatchObject({ code: 'ticked' });
    const told: number[] = [];
    const next = await walkSoldOut(
      {
        store,
        soldOutBatch: 3,
        stopped: () => false,
        onSoldOut: async (_, shoppers) => {
          told.push(...shoppers.map((s) => s.ticket));
          await publish(shoppers);
        },
      },
      view,
      { fence: 2, signal: new AbortController().signal },
    );
    expect(next).toEqual({ code: 'done', to: 10 });
    // the batch the dead holder wrote is told again, written no more: 3 + 3 + 0 + 2 = 8
    expect(told).toEqual([6, 7, 8, 9, 10]);
    expect(written).toEqual([3, 3, 0, 2]);
    const rows = await soldOutEvents(productId);
    expect(rows.map((r) => r.subject).sort()).toEqual(
      t
        .slice(3, 11)
        .map((u) => `${productId}/places/${u}`)
        .sort(),
    );
    expect(rows.every((r) => r.sequence === 1)).toBe(true);
    // the dead holder, were it to come back, is refused
    const stale = await store.soldOutBatch(productId, 1, { fence: 1, writtenTo: 0, size: 3 });
    expect(stale).toEqual({ code: 'fenced', newer: 2 });
  });
});
