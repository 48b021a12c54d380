/**
 * The relay of a shop with no webhook endpoint: nobody takes the events, so a hand-on reads none
 * of them and moves its cursor past all of those the feed shows in one statement (a sale's
 * thousands of events cost a relay run one row, not a page of them per thousand); an endpoint
 * registered afterwards is handed the events after it, as before. Product events count too. An
 * endpoint registered while a run reads the list is handed every event committed after it.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointsRepository, LanesRepository, newSecret, relay } from '../../src/events/index.js';
import { insertOrders } from '../../src/orders/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import { newProduct } from '../support/payments.js';
import { note, publishNotes } from '../support/sample-producer.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  // no worker: the relay runs here only, when the test says so
  app = await startApp(ns.config({ WEBHOOK_ALLOW_PRIVATE: 'true' }));
});
afterAll(async () => {
  await app?.close();
});

async function seedProduct(): Promise<string> {
  const productId = newProduct();
  await sql`insert into products (id, total, segments, strategy, limit_per_user, epoch)
            values (${productId}, 100000, 4, 'lockfree', 1, 1)`.execute(app.rt.db);
  return productId;
}

/** `n` orders in batches of 500, as the worker writes them: one order.created event each. */
async function sell(productId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < n; done += 500) {
    const batch = Array.from({ length: Math.min(500, n - done) }, (_, i) => {
      const orderId = randomUUID();
      ids.push(orderId);
      return {
        orderId,
        productId,
        userId: `u${done + i}`,
        quantity: 1,
        epoch: 1,
        segment: 0,
        homeSegment: 0,
        outboxId: `1-${done + i}`,
        deductedAt: Date.now(),
        payWithinSeconds: 0,
      };
    });
    await insertOrders(app.rt.db, batch as never);
  }
  return ids;
}

const cursorAt = async () =>
  (
    await sql<{
      txid: string;
      position: string;
    }>`select txid, position from webhook_relay where id = 1`.execute(app.rt.db)
  ).rows[0]!;
const lastEvent = async () =>
  (
    await sql<{ txid: string; position: string }>`select txid, position from (
       select txid, position from order_events union all select txid, position from product_events
     ) e order by txid desc, position desc limit 1`.execute(app.rt.db)
  ).rows[0]!;

describe('the relay with no endpoint', () => {
  it('moves past every event shown in one hand-on that reads none; a later endpoint gets only what follows', async () => {
    const lanes = new LanesRepository(app.rt.db);
    const productId = await seedProduct();
    await sell(productId, 2_500);
    // the feed's last event is a product event: the cursor moves past it too
    expect(await publishNotes(app.rt.db, [note(productId, `room:${productId}`, 1)])).toBe(1);
    let handOns = 0;
    const queued: string[] = [];
    const run = () =>
      relay({
        endpoints: { all: async () => [] },
        lanes: {
          horizon: () => lanes.horizon(),
          handOn: (endpoints, limit, horizon) => {
            handOns++;
            return lanes.handOn(endpoints, limit, horizon);
          },
          due: (limit) => lanes.due(limit),
          stranded: (idleMs, limit) => lanes.stranded(idleMs, limit),
          probe: (everyMs) => lanes.probe(everyMs),
        },
        probeEveryMs: 60_000,
        deliver: async (due) => void queued.push(...due.map((l) => l.subject)),
        deliverEach: async (due) => void queued.push(...due.map((l) => l.subject)),
      });
    // one hand-on, not one a page of 1 000 events: the cursor is past all 2 500; the run says it
    // found nothing to hand on (the loop waits its idle wait, not its interval)
    expect(await run()).toEqual({ events: 0, lanes: 0 });
    expect(handOns).toBe(1);
    expect(await cursorAt()).toEqual(await lastEvent());
    // nothing new: the cursor stays
    expect(await run()).toEqual({ events: 0, lanes: 0 });
    expect(await cursorAt()).toEqual(await lastEvent());
    expect(queued).toEqual([]);

    // an endpoint registered now is handed the events after the cursor, and only those
    const res = await fetch(`${app.url}/admin/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hooks', events: ['*'] }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const later = await sell(productId, 3);
    const step = await lanes.handOn(
      [{ id: ((await res.json()) as { id: string }).id, types: ['order.created'] }],
      1_000,
    );
    expect(step.events).toBe(3);
    expect(step.lanes.map((l) => l.subject).sort()).toEqual([...later].sort());
  });

  it('hands an endpoint registered while a run read the list every event committed after it', async () => {
    const lanes = new LanesRepository(app.rt.db);
    const endpoints = new EndpointsRepository(app.rt.db);
    const productId = await seedProduct();
    const late = `ep_late_${randomUUID()}`;
    let later: string[] = [];
    const run = (all: () => ReturnType<EndpointsRepository['all']>) =>
      relay({
        endpoints: { all },
        lanes: {
          horizon: () => lanes.horizon(),
          handOn: (list, limit, horizon) => lanes.handOn(list, limit, horizon),
          due: (limit) => lanes.due(limit),
          stranded: (idleMs, limit) => lanes.stranded(idleMs, limit),
          probe: (everyMs) => lanes.probe(everyMs),
        },
        probeEveryMs: 60_000,
        deliver: async () => undefined,
        deliverEach: async () => undefined,
      });
    // the run reads the list; then, before it hands on, an endpoint is registered and a sale made
    await run(async () => {
      const list = await endpoints.all();
      await endpoints.create({
        id: late,
        url: 'http://127.0.0.1:9/late',
        types: ['order.created'],
        secret: newSecret(),
      });
      later = await sell(productId, 3);
      return list;
    });
    await run(() => endpoints.all());
    const owed = await sql<{ subject: string }>`select subject from webhook_lanes
      where endpoint_id = ${late}`.execute(app.rt.db);
    expect(owed.rows.map((r) => r.subject).sort()).toEqual([...later].sort());
    await endpoints.setStatus(late, 'disabled');
  });
});
