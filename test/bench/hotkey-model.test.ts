/** `npm run bench:hotkey`'s arithmetic: segments over masters and one product's ceiling. */
import { describe, expect, it } from 'vitest';
import {
  busiestSegments,
  busiestShare,
  ceiling,
  ceilings,
  segmentsPerMaster,
  splitCosts,
  usPerServedSale,
} from '../../load-tests/bench/hotkey-model.js';

describe('the hot-key model', () => {
  it('spreads 16 segments evenly: 6/5/5 over 3 masters, one each past 16', () => {
    const per = segmentsPerMaster('p-demo', 16, 3);
    expect(per.reduce((a, b) => a + b, 0)).toBe(16);
    expect(Math.max(...per)).toBe(6);
    expect(busiestSegments('p-demo', 16, 1)).toBe(16);
    expect(busiestSegments('p-demo', 16, 24)).toBe(1);
    expect(busiestSegments('p-demo', 1, 24)).toBe(1);
  });

  it('reads the busiest share of the masters’ CPU', () => {
    expect(busiestShare([72, 5, 25])).toBe(0.71);
    expect(busiestShare([0, 0, 0])).toBe(0);
  });

  it('derives the ceiling from the busiest master: 1e6 / (u x k / N)', () => {
    // the busiest master spent 30 us per product sale holding 6 of 16 segments: 80 us per sale it serves
    const u = usPerServedSale(30, 6, 16);
    expect(u).toBe(80);
    expect(ceiling(u, 6, 16)).toBe(33_333); // = 1e6 / 30, the run's own master
    expect(ceiling(u, 1, 16)).toBe(200_000);
    expect(ceiling(0, 1, 16)).toBe(0);
    const rows = ceilings('p-demo', 16, { global: 50, segmented: u }, [1, 3, 24]);
    // global lives on one master whatever the count
    expect(rows.map((r) => r.global)).toEqual([20_000, 20_000, 20_000]);
    expect(rows.map((r) => r.segmented16)).toEqual([12_500, 33_333, 200_000]);
  });

  it('tells the segments’ cost from the order queue’s master', () => {
    // masters 0 and 1 hold 6 and 5 segments, master 2 holds 5 and the queue
    const { perServed, queue } = splitCosts([30, 25, 45], [6, 5, 5], 16, 2);
    expect(perServed).toBeCloseTo(80, 5); // (30 + 25) / (11 / 16)
    expect(queue).toBeCloseTo(20, 5); // 45 - 80 x 5 / 16
    // only the queue's master holds segments: not told apart
    expect(splitCosts([1, 2, 90], [0, 0, 1], 1, 2)).toEqual({ perServed: 90, queue: undefined });
  });
});
