/**
 * The relay's timer (src/events/relay/relay-loop.ts): back to EVENT_RELAY_INTERVAL_MS after a run that
 * handed something on, doubling to the idle wait after runs that found nothing; a failed run is
 * reported and the next one still comes; close() waits for a run under way and stops the timer.
 */
import { describe, expect, it } from 'vitest';
import { nextRelayWait, startRelayLoop } from '../../src/events/relay/relay-loop.js';

describe('the relay loop', () => {
  it('doubles its wait while runs find nothing, up to the idle wait, back on work', () => {
    const waits: number[] = [];
    let wait = 100;
    for (const found of [false, false, false, false, false, true, false]) {
      wait = nextRelayWait(wait, found, 100, 1_000);
      waits.push(wait);
    }
    expect(waits).toEqual([200, 400, 800, 1_000, 1_000, 100, 200]);
    // an interval above the idle wait is kept
    expect(nextRelayWait(5_000, false, 5_000, 1_000)).toBe(5_000);
  });

  it('runs again after a failed run, and close() waits for the run under way', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    let releaseFourth: () => void = () => {};
    let fourthStarted: () => void = () => {};
    const fourth = new Promise<void>((resolve) => (fourthStarted = resolve));
    let finishedFourth = false;
    const loop = startRelayLoop({
      intervalMs: 10,
      idleMs: 20,
      onError: (err) => errors.push(err),
      run: async () => {
        runs++;
        if (runs === 2) throw new Error('PostgreSQL went away');
        if (runs === 4) {
          fourthStarted();
          await new Promise<void>((resolve) => (releaseFourth = resolve));
          finishedFourth = true;
        }
        return { events: runs === 1 ? 3 : 0, lanes: 0 };
      },
    });
    await fourth;
    let closed = false;
    const closing = loop.close().then(() => (closed = true));
    // every promise settled that could: close() still waits for the fourth run
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    releaseFourth();
    await closing;
    expect(finishedFourth).toBe(true);
    expect(runs).toBe(4);
    expect(errors.map((e) => (e as Error).message)).toEqual(['PostgreSQL went away']);
  });
});
