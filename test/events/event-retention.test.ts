/**
 * A week passing (the events' times moved back 8 days in PostgreSQL, past EVENT_RETENTION_HOURS):
 * pruning deletes the events every endpoint has, and keeps each one an endpoint is still owed:
 * a disabled endpoint's, enabled again after the week, are all delivered; dead letters are still
 * listed and a replay sends them. Real HTTP receivers (test/support/receiver.ts).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventsRepository } from '../../src/events/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { paymentClient } from '../support/payments.js';
import {
  ORDER_EVENTS,
  type Receiver,
  receiverWithEndpoint as registered,
} from '../support/receiver.js';
import { sell } from '../support/factories.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'event-retention-test-secret-0123456789ab';
let app: RunningApp;
const receivers: Receiver[] = [];

beforeAll(async () => {
  app = await startApp(
    ns.config({
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // two attempts, then a dead letter
      WEBHOOK_RETRY_SCHEDULE: '20ms',
      EVENT_RELAY_INTERVAL_MS: '40',
      EVENT_RETENTION_HOURS: '168',
    }),
    { worker: true },
  );
});
afterAll(async () => {
  await app?.close();
  for (const r of receivers) await r.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${app.url}${path}`, {
    method,
    headers: client.admin,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

const receiverWithEndpoint = () => registered(admin, async () => 1, receivers, ORDER_EVENTS);

const ackedAll = (r: Receiver, orders: readonly string[], what: string) =>
  waitFor(
    () => `${what} (${r.acked().filter((a) => orders.includes(a.orderId)).length})`,
    async () => orders.every((id) => r.acked().some((a) => a.orderId === id)),
    60_000,
    20,
  );

interface DeadLetterView {
  orderId: string;
  cursor: string;
}

const deadLetters = async (id: string) =>
  (
    (await (await admin('GET', `/admin/webhook-endpoints/${id}/dead-letters`)).json()) as {
      deadLetters: DeadLetterView[];
    }
  ).deadLetters;

const eventsOf = async (orders: readonly string[]) =>
  (
    await app.rt.db
      .selectFrom('order_events')
      .select('order_id')
      .where('order_id', 'in', orders)
      .execute()
  ).length;

describe('pruning after a week', () => {
  it('keeps every event an endpoint is still owed: a disabled one gets them when enabled, dead letters replay', async () => {
    const healthy = await receiverWithEndpoint();
    // delivered to the only endpoint there is: nothing owes them after that
    const delivered = await sell(client, 2);
    await ackedAll(healthy.r, delivered, 'the first orders at the healthy receiver');

    const failing = await receiverWithEndpoint();
    failing.r.answer = () => ({ status: 500 });
    const away = await receiverWithEndpoint();
    expect((await admin('POST', `/admin/webhook-endpoints/${away.id}/disable`)).status).toBe(200);
    const owed = await sell(client, 3);
    await ackedAll(healthy.r, owed, 'the later orders at the healthy receiver');
    await waitFor(
      'three dead letters of the failing endpoint',
      async () => (await deadLetters(failing.id)).length === 3,
      60_000,
      20,
    );
    await waitFor(
      'the disabled endpoint owed three orders',
      async () =>
        (
          await app.rt.db
            .selectFrom('webhook_lanes')
            .select('subject')
            .where('endpoint_id', '=', away.id)
            .whereRef('acked_version', '<', 'wanted_version')
            .execute()
        ).length === 3,
      30_000,
      20,
    );

    // a week and a day pass
    const all = [...delivered, ...owed];
    await app.rt.db
      .updateTable('order_events')
      .set({ occurred_at: sql`occurred_at - interval '8 days'` })
      .where('order_id', 'in', all)
      .execute();
    const events = new EventsRepository(app.rt.db);
    expect(await events.pruneEvents(168, 10_000)).toBe(2);
    expect(await eventsOf(delivered)).toBe(0);
    expect(await eventsOf(owed)).toBe(3);

    // the dead letters are still there to see and to replay
    const letters = await deadLetters(failing.id);
    expect(letters.map((d) => d.orderId).sort()).toEqual([...owed].sort());
    failing.r.answer = () => ({ status: 200 });
    // replay from the oldest dead letter's cursor (each is just before its event)
    const place = (cursor: string) => cursor.split('.').map(BigInt) as [bigint, bigint];
    const first = letters
      .map((d) => d.cursor)
      .reduce((a, b) => {
        const [[ta, pa], [tb, pb]] = [place(a), place(b)];
        return ta < tb || (ta === tb && pa < pb) ? a : b;
      });
    const replay = await admin('POST', `/admin/webhook-endpoints/${failing.id}/replay`, {
      from: first,
    });
    expect(await replay.json()).toEqual({ orders: 3, lanes: 3 });
    await ackedAll(failing.r, owed, 'the replayed dead letters');
    expect(await deadLetters(failing.id)).toEqual([]);

    // the disabled endpoint, enabled after the week, gets everything that waited
    expect((await admin('POST', `/admin/webhook-endpoints/${away.id}/enable`)).status).toBe(200);
    await ackedAll(away.r, owed, 'what waited for the disabled endpoint');
    expect(away.r.acked()).toHaveLength(3);

    // owed to nobody now (once the acknowledgements are written): pruned
    await waitFor(
      'no lane owing anything',
      async () =>
        (
          await app.rt.db
            .selectFrom('webhook_lanes')
            .select('subject')
            .whereRef('acked_version', '<', 'wanted_version')
            .execute()
        ).length === 0,
      30_000,
      20,
    );
    expect(await events.pruneEvents(168, 10_000)).toBe(3);
    expect(await eventsOf(owed)).toBe(0);
  });
});
