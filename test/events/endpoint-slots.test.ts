/**
 * A worker process's delivery slots shared among the endpoints (src/events/delivery/
 * endpoint-slots.ts): a freed slot goes to the endpoints waiting in turn; an endpoint's limit
 * halves per attempt without an answer and grows by one per answer; an attempt stalled past
 * `stallMs` frees its slot for the others; a quiet endpoint starts one attempt at a time and holds
 * back the lanes that find it busy, for the schedule's step of how long it has been quiet.
 */
import { describe, expect, it } from 'vitest';
import {
  EndpointSlots,
  holdDelay,
  type Admission,
  type Slot,
} from '../../src/events/delivery/index.js';
import { waitFor } from '../support/cli.js';

const slotOf = (a: Admission): Slot => {
  if (a.held) throw new Error(`held back for ${a.holdMs} ms`);
  return a.slot;
};

describe('endpoint slots', () => {
  it('gives freed slots to the endpoints waiting in turn', async () => {
    const slots = new EndpointSlots({
      size: 4,
      stallMs: 60_000,
      startLimit: 4,
      holdMs: () => 1_000,
    });
    const a = await Promise.all([1, 2, 3, 4].map(() => slots.enter('a')));
    const got: string[] = [];
    const waiting = [
      ...['a', 'a', 'a'].map((id) => slots.enter(id).then(() => got.push(id))),
      ...['b', 'b', 'b'].map((id) => slots.enter(id).then(() => got.push(id))),
    ];
    for (const admission of a.slice(0, 4)) slotOf(admission).release();
    await waitFor('four of the six waiting lanes started', async () => got.length === 4, 5_000, 5);
    // b came after a's three, and still has half of what was freed
    expect(got.filter((id) => id === 'b')).toHaveLength(2);
    expect(got.filter((id) => id === 'a')).toHaveLength(2);
    void waiting;
  });

  it('starts an endpoint at a quarter of the slots, halves its limit per attempt without an answer, and adds one per answer', async () => {
    const slots = new EndpointSlots({ size: 16, stallMs: 60_000, holdMs: () => 1_000 });
    const limit = () => slots.limits().get('a');
    const attempt = async (answered: boolean) => {
      const slot = slotOf(await slots.enter('a'));
      slot.attempt();
      slot.ended(answered);
      slot.release();
    };
    const seen: Array<number | undefined> = [];
    for (const answered of [true, true, true, true, false, false, false, false, true, true, true]) {
      await attempt(answered);
      seen.push(limit());
    }
    expect(seen).toEqual([5, 6, 7, 8, 4, 2, 1, 1, 2, 3, 4]);
    // at its limit of 4 (and answering), a fifth lane waits for one of the four
    const four = await Promise.all([1, 2, 3, 4].map(() => slots.enter('a')));
    let fifth: Admission | undefined;
    void slots.enter('a').then((admission) => (fifth = admission));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fifth).toBeUndefined();
    slotOf(four[0]!).release();
    await waitFor('the fifth lane', async () => fifth !== undefined, 5_000, 5);
    expect(fifth!.held).toBe(false);
  });

  it("frees a stalled attempt's slot for another endpoint, and holds back the quiet one's lanes", async () => {
    const slots = new EndpointSlots({
      size: 2,
      stallMs: 50,
      startLimit: 2,
      holdMs: (quietForMs) => 5_000 + Math.round(quietForMs),
    });
    // the hanging endpoint's two attempts take the two slots and get no answer
    const hanging = await Promise.all([slots.enter('hanging'), slots.enter('hanging')]);
    for (const a of hanging) slotOf(a).attempt();
    const healthy = slots.enter('healthy');
    const third = slots.enter('hanging');
    const [got, held] = await Promise.all([healthy, third]);
    slotOf(got).release();
    expect(got.held).toBe(false);
    // quiet (stalled, never answered) and busy: held back, for the schedule's first step
    expect(held.held).toBe(true);
    expect(held.held && held.holdMs).toBeGreaterThanOrEqual(5_050);
    // one no-answer: its limit halves; while quiet it starts one attempt at a time
    slotOf(hanging[0]!).ended(false);
    slotOf(hanging[0]!).release();
    expect(slots.limits().get('hanging')).toBe(1);
    expect((await slots.enter('hanging')).held).toBe(true);
    slotOf(hanging[1]!).ended(false);
    slotOf(hanging[1]!).release();
    const probe = await slots.enter('hanging');
    expect(probe.held).toBe(false);
    // it answers: no longer quiet, and a second lane may start beside the first
    slotOf(probe).attempt();
    slotOf(probe).ended(true);
    expect(slots.limits().get('hanging')).toBe(2);
    expect((await slots.enter('hanging')).held).toBe(false);
  });
});

describe('the hold of a lane whose endpoint is quiet', () => {
  it("is the schedule's step for how long the endpoint has been quiet, spread by the jitter", () => {
    const schedule = [5_000, 300_000, 1_800_000];
    const middle = () => 0.5;
    expect(holdDelay(schedule, 0, middle)).toBe(5_000);
    expect(holdDelay(schedule, 4_999, middle)).toBe(5_000);
    expect(holdDelay(schedule, 5_000, middle)).toBe(300_000);
    expect(holdDelay(schedule, 304_999, middle)).toBe(300_000);
    expect(holdDelay(schedule, 305_000, middle)).toBe(1_800_000);
    expect(holdDelay(schedule, 1e9, middle)).toBe(1_800_000);
    expect(holdDelay(schedule, 0, () => 0)).toBe(4_000);
    expect(holdDelay(schedule, 0, () => 0.999_999)).toBe(6_000);
  });
});
