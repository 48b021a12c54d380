/**
 * A lane held back (its endpoint quiet) is not an attempt, and the schedule tries it at the
 * hold's end at the earliest: a lane brought forward (a probe) before a hold keeps its schedule
 * only when that is later than the hold's end. Else a probe after the earlier schedule but before
 * the hold's end counted as an attempt, and an outage cost its lanes attempts (what
 * endpoint-recovery.test caught in CI: a lane at 0 attempts went to 2 while probes ran).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EndpointsRepository, LanesRepository, newSecret } from '../../src/events/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ WEBHOOK_ALLOW_PRIVATE: 'true' }));
});
afterAll(async () => {
  await app?.close();
});

/** A live lane of a new endpoint, its schedule `scheduledInMs` from now (null: none). */
async function laneOf(scheduledInMs: number | null) {
  const endpointId = `ep_hold_${randomUUID()}`;
  await new EndpointsRepository(app.rt.db).create({
    id: endpointId,
    url: 'http://127.0.0.1:9/hold',
    types: ['order.created'],
    secret: newSecret(),
  });
  const subject = randomUUID();
  await sql`insert into webhook_lanes (endpoint_id, subject, wanted_version, acked_version,
              pending_since, attempts, next_attempt_at, scheduled_at)
            values (${endpointId}, ${subject}, 1, 0, now(), 1, now(),
              ${scheduledInMs === null ? null : sql`now() + ${scheduledInMs} * interval '1 millisecond'`})`.execute(
    app.rt.db,
  );
  return { endpointId, subject };
}

async function scheduleOf(ref: { endpointId: string; subject: string }) {
  const r = await sql<{ next: number; scheduled: number; attempts: number }>`
    select extract(epoch from next_attempt_at - now()) * 1000 as next,
           extract(epoch from scheduled_at - now()) * 1000 as scheduled, attempts
    from webhook_lanes where endpoint_id = ${ref.endpointId} and subject = ${ref.subject}`.execute(
    app.rt.db,
  );
  const row = r.rows[0]!;
  return { next: Number(row.next), scheduled: Number(row.scheduled), attempts: row.attempts };
}

it("schedules a held lane at the hold's end, or later when brought forward ahead of a later schedule", async () => {
  const lanes = new LanesRepository(app.rt.db);
  const HOLD = 300_000;
  // came due (no schedule ahead), brought forward ahead of a sooner schedule, of a later one
  const due = await laneOf(null);
  const sooner = await laneOf(2_000);
  const later = await laneOf(1_800_000);
  await lanes.hold(
    [due, sooner, later].map((ref) => ({ ...ref, delayMs: HOLD })),
    'the endpoint is quiet',
  );
  for (const ref of [due, sooner]) {
    const s = await scheduleOf(ref);
    expect(s.attempts).toBe(1);
    expect(s.next).toBeGreaterThan(HOLD - 5_000);
    // the schedule's time is the hold's end: a probe before it that fails is not counted
    expect(Math.abs(s.scheduled - s.next)).toBeLessThan(1);
  }
  const kept = await scheduleOf(later);
  expect(kept.attempts).toBe(1);
  expect(kept.next).toBeLessThan(HOLD + 1_000);
  expect(kept.scheduled).toBeGreaterThan(1_800_000 - 5_000);
});
