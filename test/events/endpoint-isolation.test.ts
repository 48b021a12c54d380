/**
 * One receiver that never answers beside a healthy one (real HTTP receivers,
 * test/support/receiver.ts; WEBHOOK_CONCURRENCY 4, a 60 s timeout): the healthy endpoint gets
 * every event while the hanging one holds its requests open, and every lane of the hanging one
 * is either the one request it holds (a new endpoint starts at a quarter of the slots, and one
 * that never answers gets no more) or held back (not attempted, its count unchanged)
 * (src/events/delivery/endpoint-slots.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { paymentClient } from '../support/payments.js';
import {
  type Receiver,
  orderVersionIn,
  ORDER_EVENTS,
  receiverWithEndpoint as registered,
} from '../support/receiver.js';
import { sell } from '../support/factories.js';

const ns = useNamespace();
const WEBHOOK_SECRET = 'endpoint-isolation-test-secret-0123456789';
const ORDERS = 24;
const HELD = 'held back: the endpoint is not answering';
let app: RunningApp;
const receivers: Receiver[] = [];

beforeAll(async () => {
  app = await startApp(
    ns.config({
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CONCURRENCY: '4',
      // a hanging request outlives the test's wait for the healthy receiver's events
      WEBHOOK_TIMEOUT_MS: '60000',
      // a lane held back waits the schedule's first step (24 s at least): once, within the test
      WEBHOOK_RETRY_SCHEDULE: '30s,60s',
      EVENT_RELAY_INTERVAL_MS: '40',
    }),
    { worker: true },
  );
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await app?.close();
});

const client = paymentClient(() => app.url, WEBHOOK_SECRET, ns.adminToken);

const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${app.url}${path}`, {
    method,
    headers: client.admin,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });

const rowVersion = orderVersionIn(() => app.rt.db);

const receiverWithEndpoint = () => registered(admin, rowVersion, receivers, ORDER_EVENTS);

const lanesOf = (endpointId: string) =>
  app.rt.db
    .selectFrom('webhook_lanes')
    .select(['subject', 'attempts', 'last_error', 'acked_version'])
    .where('endpoint_id', '=', endpointId)
    .execute();

describe('a receiver that never answers', () => {
  it('delays no other endpoint: the healthy one gets every event while it holds its one request', async () => {
    // registered first: its lanes are handed on (and queued) ahead of the healthy one's
    const hanging = await receiverWithEndpoint();
    hanging.r.answer = () => ({ hang: true });
    const healthy = await receiverWithEndpoint();
    const orders = await sell(client, ORDERS);

    await waitFor(
      () =>
        `the healthy receiver's ${ORDERS} events while the other hangs (got ${healthy.r.acked().length}, the hanging one holds ${hanging.r.arrivals.length} requests)`,
      async () => orders.every((id) => healthy.r.acked().some((a) => a.orderId === id)),
      45_000,
      20,
    );
    expect(healthy.r.acked()).toHaveLength(ORDERS);

    // every lane of the hanging endpoint is a request it holds open, or held back unattempted
    let seen = '';
    await waitFor(
      () => `${ORDERS} lanes of the hanging endpoint held back or hanging (${seen})`,
      async () => {
        const lanes = await lanesOf(hanging.id);
        const held = lanes.filter((l) => l.last_error === HELD).length;
        seen = `${held} held, ${hanging.r.arrivals.length} hanging, of ${lanes.length} lanes`;
        return lanes.length === ORDERS && held + hanging.r.arrivals.length === ORDERS;
      },
      30_000,
      20,
    );
    const lanes = await lanesOf(hanging.id);
    // nothing of it ended yet: no attempt failed, none acknowledged
    expect(lanes.filter((l) => l.attempts > 0)).toEqual([]);
    expect(lanes.filter((l) => l.acked_version > 0)).toEqual([]);
    expect(hanging.r.arrivals.every((a) => a.answered === 0)).toBe(true);
    // it started at a quarter of the 4 slots and never answered: one request was ever sent
    expect(hanging.r.arrivals).toHaveLength(1);

    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    const held = new RegExp(`seckill_webhook_held_total\\{endpoint="${hanging.id}"\\} (\\d+)`).exec(
      metrics,
    );
    expect(Number(held?.[1])).toBe(ORDERS - hanging.r.arrivals.length);
    for (const e of [healthy, hanging]) {
      expect((await admin('POST', `/admin/webhook-endpoints/${e.id}/disable`)).status).toBe(200);
    }
  });
});
