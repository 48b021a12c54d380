import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../../src/config/index.js';

const ROOT = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = (heading: string) => readme.split(`\n## ${heading}\n`)[1]!.split('\n## ')[0]!;

describe('README', () => {
  it('lists at most ten variables, each one the config reads (all of them: docs/configuration.md)', () => {
    const config = section('Configuration');
    const listed = [...config.matchAll(/^\| `([A-Z_]+)`/gm)].map((m) => m[1]!);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.length).toBeLessThanOrEqual(10);
    expect(listed.filter((name) => !(name in envSchema.shape))).toEqual([]);
    expect(config).toContain('(docs/configuration.md)');
  });

  it('has a Quick start of exactly two command lines, the second being what CI runs', () => {
    const quick = readme.split('## Quick start')[1]!.split('\n## ')[0]!;
    const block = quick
      .match(/```sh\n([\s\S]*?)```/)![1]!
      .trim()
      .split('\n');
    expect(block).toHaveLength(2);
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    // CI runs exactly that line; after it, only the short chaos run (docs/chaos.md)
    const commands = ci
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#') && !l.startsWith('echo '));
    const at = commands.indexOf(block[1]!);
    expect(at).toBeGreaterThan(0);
    expect(commands.slice(at + 1)).toEqual([
      'npm run chaos -- --seed 7 --duration 60 --out "${TMPDIR:-/tmp}/seckill-ci-chaos"',
    ]);
  });

  it('is a page a newcomer finishes: at most 300 lines (the rest is in docs/)', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
  });

  it('names, under Prerequisites, every package CI installs for the tests', () => {
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    const packages = [...ci.matchAll(/missing\+=\(([^)]*)\)/g)].flatMap((m) => m[1]!.split(/\s+/));
    expect(packages).toContain('redis-server');
    const prerequisites = section('Prerequisites').toLowerCase();
    expect(packages.filter((p) => !prerequisites.includes(p.toLowerCase()))).toEqual([]);
  });
});
