/**
 * What the operator sees is true: a real Prometheus (Debian's `prometheus`) scrapes 2 API and 2
 * worker processes every second, and another service with the same generic metric names
 * (tools/observability/foreign.ts: a shared Prometheus), and evaluates a copy of
 * deploy/prometheus/alerts.yaml (two thresholds lowered, tools/observability/observe.ts); every
 * panel of deploy/grafana/*.json (its variables resolved as Grafana does) and
 * every rule is evaluated through its HTTP API while real conditions are produced
 * (tools/observability/scenarios.ts, also `npm run observability`). Exclusive: the healthy sale
 * must stay under the latency alert's bound, so no other file's load may count against it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observe, type Observed } from '../../tools/observability/observe.js';
import {
  missingRules,
  NOT_YET_PRODUCED,
  SCENARIOS,
  stockPanelIsTrue,
  unproduced,
} from '../../tools/observability/scenarios.js';
import { tempDir } from '../support/servers.js';

describe('observability end to end: Prometheus, 2 API + 2 worker processes', () => {
  const dir = tempDir('observability');
  let o: Observed | undefined;
  beforeAll(async () => {
    o = await observe(dir.path);
  }, 240_000);
  afterAll(async () => {
    await o?.stop();
    dir.remove();
  }, 60_000);

  it('every alert of alerts.yaml is produced by a scenario below, or waits for its metric', () => {
    expect(o!.rules.length).toBeGreaterThanOrEqual(14);
    expect(unproduced(o!.rules)).toEqual([]);
    // the waiting list names only rules that exist
    const names = o!.rules.map((r) => r.alert);
    for (const a of Object.keys(NOT_YET_PRODUCED)) expect(names).toContain(a);
    // and the other way: a rule deleted or renamed is named at once
    expect(missingRules(o!.rules)).toEqual([]);
    expect(missingRules(o!.rules.filter((r) => r.alert !== 'SeckillLockLost'))).toEqual([
      'SeckillLockLost',
    ]);
  });

  for (const s of SCENARIOS) {
    it(
      s.name,
      async () => {
        expect(await s.run(o!)).toBeTruthy();
      },
      400_000,
    );
    if (s === SCENARIOS[0]) {
      it('catches a stock panel that sums the gauge every worker reads from the same Redis', async () => {
        // the healthy scenario (first) left obs-healthy with 40 units, which both workers export
        // (later scenarios stop one of them)
        expect(await stockPanelIsTrue(o!, 'obs-healthy')).toBe(40);
        const summing = {
          ...o!,
          panels: o!.panels.map((p) =>
            p.title === 'Stock remaining' ? { ...p, expr: p.expr.replace(/^max\b/, 'sum') } : p,
          ),
        };
        expect(summing.panels.find((p) => p.title === 'Stock remaining')!.expr).toMatch(/^sum\b/);
        await expect(stockPanelIsTrue(summing, 'obs-healthy', 5_000)).rejects.toThrow(
          /panel 80, admin API 40/,
        );
      }, 60_000);
    }
  }
});
