/**
 * The relay: hands the feed's new events on to the endpoints that take them, active or not (a
 * lane per endpoint and subject, in PostgreSQL, with the relay's cursor in the same transaction),
 * then asks for their deliveries (BullMQ jobs, a batch of lanes each). Each run also gives a job
 * of its own to every lane due again (a failed attempt's next one, kept in the lane; one lane of
 * each endpoint found down is brought forward every `probeEveryMs`, to find out whether it is
 * back), and to a lane left with something due and no job (a crash between the commit and the
 * enqueue, a replay, an endpoint enabled again) once it has been left alone a while.
 */
import type { EventType } from '../feed/index.js';
import type { HandOn, LaneRef } from '../lanes/index.js';

export interface RelayDeps {
  endpoints: {
    all(): Promise<Array<{ id: string; types: EventType[]; status: 'active' | 'disabled' }>>;
  };
  lanes: {
    /** the feed's horizon now */
    horizon(): Promise<bigint>;
    handOn(
      endpoints: ReadonlyArray<{ id: string; types: readonly EventType[] }>,
      limit: number,
      horizon: bigint,
    ): Promise<HandOn>;
    due(limit: number): Promise<LaneRef[]>;
    stranded(idleMs: number, limit: number): Promise<LaneRef[]>;
    probe(everyMs: number): Promise<LaneRef[]>;
  };
  /** how often an endpoint found down gets one lane tried, to find out whether it is back */
  probeEveryMs: number;
  /** queues the lanes handed on for delivery (batches) */
  deliver(lanes: readonly LaneRef[]): Promise<void>;
  /** queues each lane's own job (once: a lane with a job already is left alone) */
  deliverEach(lanes: readonly LaneRef[]): Promise<void>;
}

/** Events one hand-on reads, and hand-ons one run makes at most. */
export const RELAY_PAGE = 1_000;
const PAGES_PER_RUN = 20;

/**
 * A lane left this long with something due and no job queued is queued again (a batch waits its
 * turn in the queue under load: past this its lanes may be sent twice, which receivers dedupe).
 */
export const STRANDED_AFTER_MS = 30_000;

export async function relay(deps: RelayDeps): Promise<{ events: number; lanes: number }> {
  // the horizon first: an endpoint registered after the list below was read is owed every event
  // committed after it, and those are above this horizon (handed on at the next run, to it too)
  const horizon = await deps.lanes.horizon();
  const endpoints = await deps.endpoints.all();
  if (endpoints.length === 0) {
    // nobody takes any: the cursor moves past the feed (one statement), and the run counts as
    // one that found nothing, so the loop waits its idle wait between runs
    await deps.lanes.handOn(endpoints, RELAY_PAGE, horizon);
    return { events: 0, lanes: 0 };
  }
  let events = 0;
  let lanes = 0;
  for (let page = 0; page < PAGES_PER_RUN; page++) {
    // a disabled endpoint's lanes are handed on and wait (enabled again, they are found stranded)
    const step = await deps.lanes.handOn(endpoints, RELAY_PAGE, horizon);
    if (step.lanes.length) await deps.deliver(step.lanes);
    events += step.events;
    lanes += step.lanes.length;
    if (!step.ran || step.events < RELAY_PAGE) break;
  }
  await deps.lanes.probe(deps.probeEveryMs);
  const own = [
    ...(await deps.lanes.due(RELAY_PAGE)),
    ...(await deps.lanes.stranded(STRANDED_AFTER_MS, RELAY_PAGE)),
  ];
  if (own.length) await deps.deliverEach(own);
  return { events, lanes: lanes + own.length };
}
