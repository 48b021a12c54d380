/**
 * `npm run bench:crowd`'s own interface and its picture, without running a crowd: `--help` lists
 * every option with its default (it was a stack trace), a bad value exits 2 saying which, and the
 * line over time counts exactly who was in line, admitted and sold at each step.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CrowdHistory } from '../../load-tests/bench/crowd-clients.js';
import { lineOverTime, lineSvg, lineText, stepFor } from '../../load-tests/bench/crowd-picture.js';

const ROOT = join(import.meta.dirname, '..', '..');
const crowd = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'load-tests/bench/crowd.ts', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
  });

describe('bench:crowd options', () => {
  it('--help prints every option with its default and exits 0, starting nothing', () => {
    const r = crowd('--help');
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
    for (const line of [
      /--shoppers <1000> +shoppers/,
      /--bots <10> /,
      /--admit-per-second <100> /,
      /--only <value> +run one side only/,
      /--no-build +use dist/,
      /--help +print this and exit/,
    ]) {
      expect(r.stdout).toMatch(line);
    }
  });

  it('exits 2 naming a bad value, or an unknown option, with the options listed', () => {
    for (const [args, why] of [
      [['--shoppers', 'many'], /--shoppers must be a whole number above 0 \(got many\)/],
      [['--stock', '0'], /--stock must be a whole number above 0/],
      [['--only', 'both'], /--only is one of no room, room, challenge, room \+ challenge/],
      [['--speed', '3'], /Unknown option '--speed'/],
    ] as const) {
      const r = crowd(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(why);
      expect(r.stderr).toMatch(/--admitted-for <10>/);
      expect(r.stdout).toBe('');
    }
  });
});

describe('the line over time', () => {
  const opensAt = 1_000_000;
  const history = {
    people: [
      // joined 1 s before the opening, admitted at +1 s, bought at +1.5 s
      {
        arrivedAt: opensAt - 1_000,
        admittedAt: opensAt + 1_000,
        boughtAt: opensAt + 1_500,
        leftAt: opensAt + 1_500,
      },
      // joined at the opening, admitted at +2 s, never bought (the turn ran out), left at +3 s
      { arrivedAt: opensAt, admittedAt: opensAt + 2_000, leftAt: opensAt + 3_000 },
      // joined at +0.5 s, told sold out at +3 s
      { arrivedAt: opensAt + 500, leftAt: opensAt + 3_000 },
    ],
    botBuys: [opensAt + 200],
  } as unknown as CrowdHistory;

  it('counts who is in line, admitted and sold at each step', () => {
    const samples = lineOverTime(history, opensAt, 500);
    const at = (ms: number) => samples.find((s) => s.atMs === ms);
    expect(samples[0]).toEqual({ atMs: -1_000, inLine: 1, admitted: 0, sold: 0 });
    expect(at(0)).toEqual({ atMs: 0, inLine: 2, admitted: 0, sold: 0 });
    expect(at(500)).toEqual({ atMs: 500, inLine: 3, admitted: 0, sold: 1 });
    expect(at(1_000)).toEqual({ atMs: 1_000, inLine: 2, admitted: 1, sold: 1 });
    expect(at(1_500)).toEqual({ atMs: 1_500, inLine: 2, admitted: 1, sold: 2 });
    expect(at(2_000)).toEqual({ atMs: 2_000, inLine: 1, admitted: 2, sold: 2 });
    expect(at(3_000)).toEqual({ atMs: 3_000, inLine: 0, admitted: 2, sold: 2 });
    expect(stepFor(history)).toBe(500);
    const text = lineText(samples, 10);
    expect(text.split('\n')[0]).toMatch(/t \(s\) +in line +admitted +sold/);
    expect(text).toContain('   0.5  ##########      3         0       1');
    expect(lineSvg(samples, 'room')).toMatch(/^<svg .*<polyline .*sold so far.*<\/svg>$/s);
  });
});

describe("the line's cost", () => {
  it("reads a percentile of the API's poll histogram between two scrapes, linear within a bucket", async () => {
    const { histogramPercentile } = await import('../../load-tests/bench/crowd-scale.js');
    const before = new Map([
      [0.001, 10],
      [0.0025, 10],
      [0.005, 10],
      [Infinity, 10],
    ]);
    const after = new Map([
      [0.001, 60],
      [0.0025, 109],
      [0.005, 110],
      [Infinity, 110],
    ]);
    // 100 polls: 50 under 1 ms, 49 from 1 to 2.5 ms, 1 from 2.5 to 5 ms
    expect(histogramPercentile(before, after, 50)).toBeCloseTo(1, 6);
    expect(histogramPercentile(before, after, 99)).toBeCloseTo(2.5, 6);
    expect(histogramPercentile(before, after, 100)).toBeCloseTo(5, 6);
    expect(histogramPercentile(after, after, 50)).toBe(0);
  });
});
