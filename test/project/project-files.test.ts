/** The files a newcomer opens first say true things: the licence, the variables, the changes. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envExample, envSchema } from '../../src/config/index.js';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

describe('project files', () => {
  it('.env.example lists every variable the config reads, at its default (npm run env:example)', () => {
    const file = read('.env.example');
    expect(file, 'stale: run `npm run env:example`').toBe(envExample());
    const listed = [...file.matchAll(/^# ([A-Z][A-Z0-9_]*)=(.*)$/gm)];
    expect(listed.map((m) => m[1]).sort()).toEqual(Object.keys(envSchema.shape).sort());
    const value = (name: string) => listed.find((m) => m[1] === name)![2];
    expect(value('PORT')).toBe('3000');
    expect(value('QUEUE_PREFIX')).toBe('{skq}');
    expect(value('REDIS_URL')).toBe('');
    // each default, as written, is what the config would take
    const env = Object.fromEntries(listed.filter((m) => m[2] !== '').map((m) => [m[1], m[2]]));
    expect(envSchema.parse(env)).toEqual(envSchema.parse({}));
  });

  it('LICENSE is the MIT licence package.json names', () => {
    expect(read('LICENSE')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} /);
    expect((JSON.parse(read('package.json')) as { license: string }).license).toBe('MIT');
  });

  it('CHANGELOG.md keeps an Unreleased section first (Keep a Changelog)', () => {
    const changelog = read('CHANGELOG.md');
    expect(changelog).toMatch(/keepachangelog\.com/);
    const sections = [...changelog.matchAll(/^## \[(.+?)\]/gm)].map((m) => m[1]);
    expect(sections[0]).toBe('Unreleased');
    const unreleased = changelog.split('## [Unreleased]')[1]!.split(/\n## /)[0]!;
    expect(unreleased).toMatch(/^### (Added|Changed|Fixed)$/m);
  });
});
