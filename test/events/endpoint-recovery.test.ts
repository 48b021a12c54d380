/**
 * A receiver back after an outage gets what waited within seconds, not at the schedule's next
 * step (5 min here): a probe finds it back, and its answer brings the endpoint's waiting lanes
 * forward; an attempt brought forward that fails is not counted. And an admin's "retry now"
 * (`POST /admin/webhook-endpoints/:id/retry`, `seckill webhooks retry --id`) for a receiver
 * that answered 500 and is fixed. Real HTTP receivers (test/support/receiver.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli, waitFor } from '../support/cli.js';
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
const WEBHOOK_SECRET = 'endpoint-recovery-test-secret-0123456789';
const ORDERS = 5;
let app: RunningApp;
const receivers: Receiver[] = [];

beforeAll(async () => {
  app = await startApp(
    ns.config({
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // the second attempt after 2 s, the third after 5 min: what a short outage must not cost
      WEBHOOK_RETRY_SCHEDULE: '2s,5m,30m',
      WEBHOOK_TIMEOUT_MS: '1500',
      EVENT_RELAY_INTERVAL_MS: '40',
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

const rowVersion = orderVersionIn(() => app.rt.db);

const receiverWithEndpoint = () => registered(admin, rowVersion, receivers, ORDER_EVENTS);

const lanesOf = (endpointId: string) =>
  app.rt.db
    .selectFrom('webhook_lanes')
    .select(['subject', 'attempts', 'next_attempt_at', 'dead_version'])
    .where('endpoint_id', '=', endpointId)
    .execute();

/** Every lane of the endpoint waits a minute or more (the schedule's 5 min step, or held). */
async function allWaitingMinutes(endpointId: string) {
  let seen = '';
  await waitFor(
    () => `the ${ORDERS} lanes waiting minutes (${seen})`,
    async () => {
      const lanes = await lanesOf(endpointId);
      const later = Date.now() + 60_000;
      const waiting = lanes.filter((l) => (l.next_attempt_at?.getTime() ?? 0) > later);
      seen = `${waiting.length} of ${lanes.length}`;
      return lanes.length === ORDERS && waiting.length === ORDERS;
    },
    60_000,
    20,
  );
}

const ackedAll = (r: Receiver, orders: readonly string[], what: string) =>
  waitFor(
    () => `${what} (${r.acked().filter((a) => orders.includes(a.orderId)).length} of ${ORDERS})`,
    async () => orders.every((id) => r.acked().some((a) => a.orderId === id)),
    60_000,
    20,
  );

describe('an endpoint back after an outage', () => {
  it('gets its waiting events within seconds of coming back, not at the next step (5 min)', async () => {
    const { r, id } = await receiverWithEndpoint();
    await r.stop();
    const orders = await sell(client, ORDERS);
    await allWaitingMinutes(id);
    // probes while it is down (one lane brought forward every 2 s) fail, and are not counted
    const before = new Map((await lanesOf(id)).map((l) => [l.subject, l.attempts]));
    const since = new Date();
    const probes = new Set<number>();
    await waitFor(
      () => `two probes of the endpoint while it is down (saw ${probes.size})`,
      async () => {
        const e = await app.rt.db
          .selectFrom('webhook_endpoints')
          .select('probed_at')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        if (e.probed_at && e.probed_at > since) probes.add(e.probed_at.getTime());
        return probes.size >= 2;
      },
      30_000,
      20,
    );
    await allWaitingMinutes(id);
    const after = new Map((await lanesOf(id)).map((l) => [l.subject, l.attempts]));
    expect(after).toEqual(before);

    await r.start();
    await ackedAll(r, orders, 'the events that waited, once the receiver is back');
    expect(r.acked().filter((a) => orders.includes(a.orderId))).toHaveLength(ORDERS);
    expect((await lanesOf(id)).filter((l) => l.dead_version !== null)).toEqual([]);
    expect((await admin('POST', `/admin/webhook-endpoints/${id}/disable`)).status).toBe(200);
  }, 180_000);
});

describe('retry now', () => {
  it('tries every waiting lane of an endpoint at once: the admin API, then the CLI', async () => {
    const { r, id } = await receiverWithEndpoint();
    // answering, but 500: each event's own failure, not an endpoint that is down
    r.answer = () => ({ status: 500 });
    const orders = await sell(client, ORDERS);
    await allWaitingMinutes(id);
    r.answer = () => ({ status: 200 });

    const res = await admin('POST', `/admin/webhook-endpoints/${id}/retry`);
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ lanes: ORDERS });
    await ackedAll(r, orders, 'the events retried now');

    // the CLI, on PostgreSQL: again after a second round of 500s
    r.answer = () => ({ status: 500 });
    const more = await sell(client, ORDERS);
    await waitFor(
      'the second round waiting minutes',
      async () => {
        const lanes = (await lanesOf(id)).filter((l) => more.includes(l.subject));
        const later = Date.now() + 60_000;
        return lanes.length === ORDERS && lanes.every((l) => l.next_attempt_at!.getTime() > later);
      },
      60_000,
      20,
    );
    r.answer = () => ({ status: 200 });
    const run = runCli(['webhooks', 'retry', '--id', id], {
      DATABASE_URL: ns.databaseUrl,
      REDIS_URL: ns.redisUrl,
      KEY_PREFIX: ns.id,
    });
    expect(await run.exited, run.stderr()).toBe(0);
    expect(JSON.parse(run.stdout())).toEqual({ lanes: ORDERS });
    await ackedAll(r, more, 'the events retried by the CLI');

    // nothing waits now; a disabled endpoint, an unknown one
    expect(await (await admin('POST', `/admin/webhook-endpoints/${id}/retry`)).json()).toEqual({
      lanes: 0,
    });
    expect((await admin('POST', `/admin/webhook-endpoints/${id}/disable`)).status).toBe(200);
    const disabled = await admin('POST', `/admin/webhook-endpoints/${id}/retry`);
    expect(disabled.status).toBe(409);
    expect(((await disabled.json()) as { type: string }).type).toBe(
      'urn:seckill:problem:webhook-endpoint-disabled',
    );
    const unknown = await admin('POST', '/admin/webhook-endpoints/ep_AAAAAAAAAAAAAAAA/retry');
    expect(unknown.status).toBe(404);
  }, 300_000);
});
