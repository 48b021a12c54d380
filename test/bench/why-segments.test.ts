/** The "why segments" blocks the benches rewrite in README.md and docs/benchmarks.md. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docsBlock, readmeBlock, replaceBlock } from '../../load-tests/bench/why-segments.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BEGIN =
  '<!-- why-segments:begin (generated: npm run bench, bench:hotkey, bench:k6 with --update-report) -->';
const END = '<!-- why-segments:end -->';

describe('the why-segments blocks', () => {
  it('are in both documents, once each', () => {
    for (const doc of ['README.md', 'docs/benchmarks.md']) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      expect(text.split(BEGIN)).toHaveLength(2);
      expect(text.split(END)).toHaveLength(2);
    }
  });

  it('replaces only what is between the markers', () => {
    const text = `before\n${BEGIN}\nold\n${END}\nafter\n`;
    expect(replaceBlock(text, 'new')).toBe(`before\n${BEGIN}\nnew\n${END}\nafter\n`);
    expect(replaceBlock('no block', 'new')).toBe('no block');
  });

  it('quotes the runs, and says what was not measured', () => {
    const bench = {
      date: '2026-11-28',
      load1: 0.4,
      heldSegmented16VsHeldGlobal: 4.6,
      heldSegmented16VsHeldGlobalAt1ms: 14.4,
      segmented16VsGlobal: 1.02,
      globalVsHeldGlobal: 2,
      restocksSegmented16VsGlobal: 3.9,
      restocksGlobalVsGlobal: 0.2,
      restocksPerS: 20,
    };
    const docs = docsBlock({ bench });
    expect(docs).toContain('| 4.6x | `npm run bench`, 2026-11-28, load average 0.4 |');
    expect(docs).toContain('not measured yet: `npm run bench:hotkey` -- --update-report');
    const readme = readmeBlock({ bench });
    expect(readme).toContain('4.6x');
    expect(readme).toContain('14.4x');
  });
});
