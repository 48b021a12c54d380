/**
 * `npm run bench`'s pure parts: the scenario names `--only` takes, the ratios of a run and its
 * capacity models, "not run" (null in the JSON line) where a scenario was left out.
 */
import { describe, expect, it } from 'vitest';
import { capacityText, runCapacity } from '../../load-tests/bench/capacity.js';
import { table } from '../../load-tests/bench/report.js';
import {
  defaultScenarios,
  heldArithmetic,
  heldName,
  parseOnly,
  pathName,
  ratioRows,
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
    // a scenario that did not run leaves its ratios without a value: null, not 0
    expect(ratios.heldSegmented64VsHeldGlobal).toBeNull();
    expect(ratios.refusalVsCeiling).toBeNull();
    expect(ratios.lockfreeVsGlobalAt1ms).toBeNull();
  });

  it('prints "not run" beside the target of a ratio whose scenario did not run (--only)', () => {
    const ratios = ratiosOf(run({ global: 900, 'segmented N=16': 950 }));
    const rows = ratioRows(ratios);
    expect(rows.find((r) => r.ratio === 'segmented16VsGlobal')).toEqual({
      ratio: 'segmented16VsGlobal',
      value: 1.06,
      target: '~1 on one Redis',
    });
    expect(rows.find((r) => r.ratio === 'heldSegmented16VsHeldGlobal')).toEqual({
      ratio: 'heldSegmented16VsHeldGlobal',
      value: 'not run',
      target: '>= 3',
    });
    // every ratio but the two over global and segmented N=16
    const ran = rows.filter((r) => r.value !== 'not run').map((r) => r.ratio);
    expect(ran).toEqual(['segmented16VsGlobal']);
    expect(table(rows)).toMatch(/heldSegmented16VsHeldGlobal +not run +>= 3/);
    // and null, not 0, in the JSON line
    expect(JSON.parse(JSON.stringify(ratios)).heldSegmented16VsHeldGlobal).toBeNull();
  });
});

describe("the HTTP bench's capacity models", () => {
  const row = (scenario: string, figures: Record<string, number>) => [
    scenario,
    { scenario, ...figures },
  ];
  // lockfree N=16: 1 000 sales/s of 1 000 answers, API 200 us each; after sold out: API 40 us
  const sale = row('lockfree N=16', { 'accepted/s': 1000, 'req/s': 1000, 'API us/req': 200 });
  const refusal = row('after sold out', { 'accepted/s': 0, 'req/s': 5000, 'API us/req': 40 });
  const production = row('production', { 'accepted/s': 500, 'req/s': 1000, 'API us/req': 300 });
  const rows = (...r: Array<ReturnType<typeof row>>) =>
    new Map(r as Array<[string, Record<string, string | number>]>);

  it('models the crowd from the sale and refusal rows, the production shape from its own', () => {
    const c = runCapacity(rows(sale, refusal, production));
    // 10 000 sales x 200 us + 990 000 refusals x 40 us = 41.6 cores, 60 instances at 70 %
    expect(c.crowd!.rows[0]).toMatchObject({ tier: 'API', cores: 41.6, instances: 60 });
    expect(c.crowd!.bottleneck).toBe('API');
    // production: 600 us a sale (300 us an answer, two answers a sale); 100 000 sales/s = 60 cores
    expect(c.production!.sales.rows[0]).toMatchObject({ tier: 'API', usPerSale: 600, cores: 60 });
    expect(c.production!.crowd!.rows[0]).toMatchObject({ tier: 'API', cores: 45.6 });
  });

  it('says "not run" for a model whose rows did not run, instead of a table of zeros', () => {
    const c = runCapacity(rows(sale));
    expect(c).toEqual({ crowd: null, production: null });
    expect(capacityText(c, table)).toEqual([
      'capacity for 1 000 000 requests/s, 99 % refusals (one core per instance, 70 % busy): not run (needs "lockfree N=16" and "after sold out")',
    ]);
    const p = runCapacity(rows(production));
    expect(p.crowd).toBeNull();
    expect(p.production!.crowd).toBeNull();
    const text = capacityText(p, table).join('\n');
    expect(text).toContain(
      'the production shape, same crowd: not run (needs "production" and "after sold out")',
    );
    expect(text).toMatch(/the production shape, 100 000 accepted sales\/s: bottleneck API\n/);
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
