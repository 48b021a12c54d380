/**
 * The waiting room's moments as product events (src/services/room/room-events.ts): a shopper
 * admitted, their admission about to end (ROOM_EXPIRING_LEAD_S), passed over once it ran out
 * unused; on the feed, and at a real HTTP receiver (test/support/receiver.ts), signed, in the
 * place's order, each once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointsRepository, newSecret, type EventType } from '../../src/events/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct, newUser } from '../support/payments.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const ns = useNamespace();
let app: RunningApp;
let receiver: Receiver;
const ROOM_TYPES = ['room.admitted', 'room.expiring', 'room.passed-over'];

beforeAll(async () => {
  app = await startApp(
    ns.config({
      WEBHOOK_ALLOW_PRIVATE: 'true',
      EVENT_RELAY_INTERVAL_MS: '40',
      ROOM_EXPIRING_LEAD_S: '2',
      SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
    }),
    { worker: true },
  );
  receiver = await startReceiver(async (subject) => {
    const row = await app.rt.db
      .selectFrom('product_events')
      .select((eb) => eb.fn.max('sequence').as('last'))
      .where('subject', '=', subject)
      .executeTakeFirst();
    return row?.last ?? null;
  });
  const secret = newSecret();
  receiver.secrets.push(secret);
  await new EndpointsRepository(app.rt.db).create({
    id: `ep_${randomBytes(12).toString('base64url')}`,
    url: receiver.url,
    types: ROOM_TYPES as EventType[],
    secret,
  });
});
afterAll(async () => {
  await app?.close();
  await receiver?.close();
});

const adminHeaders = {
  authorization: `Bearer ${ns.adminToken}`,
  'content-type': 'application/json',
};

describe("the room's events", () => {
  it('admitted, about to end, passed over: at the receiver in that order, signed, each once', async () => {
    const productId = newProduct();
    const shopper = newUser();
    const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: adminHeaders,
      body: JSON.stringify({
        total: 10,
        strategy: 'segmented',
        segments: 2,
        waitingRoom: { admitPerSecond: 10, maxActive: 5, admittedForSeconds: 5 },
      }),
    });
    expect(seeded.status, await seeded.clone().text()).toBe(201);
    const joined = await fetch(`${app.url}/products/${productId}/queue`, {
      method: 'POST',
      headers: { 'x-user-id': shopper },
    });
    expect(joined.status, await joined.clone().text()).toBe(200);
    // the shopper never buys: admitted, warned 2 s before the end, passed over at it
    const subject = `${productId}/places/${shopper}`;
    const arrived = () => receiver.acked().filter((a) => a.orderId === subject);
    await waitFor(
      () => `three events of ${subject} acknowledged (got ${arrived().map((a) => a.type)})`,
      async () => arrived().length >= 3,
      30_000,
      50,
    );
    const got = arrived();
    expect(got.map((a) => [a.type, a.version])).toEqual([
      ['room.admitted', 1],
      ['room.expiring', 2],
      ['room.passed-over', 3],
    ]);
    for (const a of got) expect(a.verified, `${a.id} signed`).toBe(true);
    expect(got.map((a) => a.id)).toEqual(
      ROOM_TYPES.map((type) => `${type}:${productId}:1:${shopper}`),
    );
    const [admitted, expiring, passed] = got.map((a) => a.data as Record<string, string>);
    expect(admitted).toMatchObject({ productId, userId: shopper });
    // admitted for 5 s: the deadline told on admission is the one warned of
    expect(Date.parse(admitted!.admittedUntil!) - Date.parse(admitted!.admittedAt!)).toBe(5_000);
    expect(expiring!.admittedUntil).toBe(admitted!.admittedUntil);
    expect(Date.parse(passed!.passedAt!)).toBeGreaterThanOrEqual(
      Date.parse(admitted!.admittedUntil!),
    );
    // nothing more of that place in the feed (a takeover's repeat is the same id: skipped)
    const rows = await app.rt.db
      .selectFrom('product_events')
      .select(['type', 'sequence', 'source'])
      .where('subject', '=', subject)
      .orderBy('sequence')
      .execute();
    expect(rows.map((r) => [r.type, r.sequence, r.source])).toEqual([
      ['room.admitted', 1, '/seckill/rooms'],
      ['room.expiring', 2, '/seckill/rooms'],
      ['room.passed-over', 3, '/seckill/rooms'],
    ]);
  });
});
