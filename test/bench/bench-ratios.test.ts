/** `npm run bench`'s pure parts: the scenario names `--only` takes, and the ratios of a run. */
import { describe, expect, it } from 'vitest';
import {
  defaultScenarios,
  heldArithmetic,
  heldName,
  parseOnly,
  pathName,
  ratiosOf,
  SCENARIOS,
  type Measured,
} from '../../load-tests/bench/http-scenarios.js';

const run = (rows: Record<string, number>) =>
  new Map<string, Measured>(
    Object.entries(rows).map(([name, accepted]) => [name, { accepted, answered: accepted }]),
  );

describe('the HTTP bench scenarios', () => {
  it('splits --only at the commas between names, not inside parentheses', () => {
    expect(parseOnly('global, segmented N=16 (held lock, +1 ms),lockfree N=16 (+0.5 ms)')).toEqual([
      'global',
      'segmented N=16 (held lock, +1 ms)',
      'lockfree N=16 (+0.5 ms)',
    ]);
  });

  it('names every scenario once; the default run has the held-lock pair at +1 ms, --rtt the grid', () => {
    const names = SCENARIOS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    const everyRun = defaultScenarios(false).map((s) => s.name);
    expect(everyRun).toEqual(
      expect.arrayContaining([heldName(1), heldName(16), heldName(1, 1), heldName(16, 1)]),
    );
    expect(everyRun).not.toContain(heldName(64, 2));
    expect(everyRun).not.toContain(pathName('global', 0.5));
    const grid = defaultScenarios(true).map((s) => s.name);
    expect(grid).toHaveLength(4 * 4 + 3 * 4);
    expect(grid).toContain(heldName(64, 2));
    expect(grid).toContain(pathName('lockfree N=16', 0.5));
    expect(grid).not.toContain('production');
  });

  it('reads the held-lock and restock ratios from their rows', () => {
    const ratios = ratiosOf(
      run({
        global: 900,
        'segmented N=16': 950,
        [heldName(1)]: 300,
        [heldName(16)]: 1200,
        [heldName(1, 1)]: 50,
        [heldName(16, 1)]: 700,
        'global + restocks': 200,
        'segmented N=16 + restocks': 800,
      }),
    );
    expect(ratios).toMatchObject({
      segmented16VsGlobal: 1.06,
      heldSegmented16VsHeldGlobal: 4,
      heldSegmented16VsHeldGlobalAt1ms: 14,
      globalVsHeldGlobal: 3,
      restocksSegmented16VsGlobal: 4,
      restocksGlobalVsGlobal: 0.22,
    });
    // a scenario that did not run makes its ratios 0, not NaN
    expect(ratios.heldSegmented64VsHeldGlobal).toBe(0);
    expect(ratios.lockfreeVsGlobalAt1ms).toBe(0);
  });

  it('says what bounds the held-lock ratio: the round trip for one lock, the CPU for 16', () => {
    // global: 1 000 sales/s = one per 4 round trips of 250 us; N=16: the server 200 us a sale
    const h = heldArithmetic(
      { accepted: 1000, serverUs: 300, allUs: 600 },
      { accepted: 3000, serverUs: 200, allUs: 500 },
      2,
    );
    expect(h).toEqual({
      roundTripUs: 250,
      serverCeiling: 5000,
      machineCeiling: 4000,
      coresBusy: 1.5,
      maxRatio: 4,
    });
  });
});
