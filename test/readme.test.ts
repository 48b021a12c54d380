import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../src/config/index.js';

const ROOT = join(import.meta.dirname, '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('README', () => {
  it('documents every environment variable the config reads, and no others', () => {
    const section = readme.split('## Configuration')[1]!.split('\n## ')[0]!;
    const documented = [...section.matchAll(/^\| `([A-Z_]+)`/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(envSchema.shape).sort());
  });

  it('has a Quick start of exactly two command lines, the second being what CI runs', () => {
    const quick = readme.split('## Quick start')[1]!.split('\n## ')[0]!;
    const block = quick
      .match(/```sh\n([\s\S]*?)```/)![1]!
      .trim()
      .split('\n');
    expect(block).toHaveLength(2);
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    expect(ci.trim().split('\n').at(-1)).toBe(block[1]);
  });
});
