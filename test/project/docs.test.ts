/**
 * The docs say true things about the repository: every relative link and #anchor of README.md
 * and docs/ resolves (GitHub's heading anchors), every page of docs/ can be reached from the
 * README, and docs/configuration.md names every variable the config reads, once, at its default.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { envSchema } from '../../src/config/index.js';
import { schemaDefault, type EnvName } from '../../src/config/env-docs.js';
import { anchorsOf, brokenLinks, relativeLinks, slug } from '../support/markdown.js';

const ROOT = join(import.meta.dirname, '..', '..');

function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return markdownUnder(path);
    return e.name.endsWith('.md') ? [path] : [];
  });
}
const DOCS = ['README.md', ...markdownUnder('docs')];

describe('the link check itself', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'seckill-docs-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("makes GitHub's anchors", () => {
    expect(slug('The sale (`src/inventory`, `lua/deduct-5.lua`)')).toBe(
      'the-sale-srcinventory-luadeduct-5lua',
    );
    expect(slug('A master is lost (`kill -9`, a crashed machine)')).toBe(
      'a-master-is-lost-kill--9-a-crashed-machine',
    );
    expect(slug('`npm run bench:lock`: the lock alone')).toBe('npm-run-benchlock-the-lock-alone');
    expect(slug('API µs/req and [a link](x.md)')).toBe('api-µsreq-and-a-link');
    expect([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n## A\n')]).toEqual([
      'a',
      'a-1',
      'a-2',
    ]);
  });

  it('finds a missing file, a missing anchor and a link that leaves the repository, not code', () => {
    writeFileSync(join(tmp, 'other.md'), '# Here\n');
    writeFileSync(
      join(tmp, 'doc.md'),
      [
        '# Doc',
        '[ok](other.md#here) [self](#doc) [web](https://example.com/x.md) ![img](other.md)',
        '[gone](missing.md) [no anchor](other.md#there) [out](../../etc/passwd)',
        '`[in code](missing.md)`',
        '```',
        '[in a block](missing.md)',
        '```',
        '[ref]: other.md#nowhere',
      ].join('\n'),
    );
    expect(relativeLinks(readFileSync(join(tmp, 'doc.md'), 'utf8')).map((l) => l.target)).toEqual([
      'other.md#here',
      '#doc',
      'other.md',
      'missing.md',
      'other.md#there',
      '../../etc/passwd',
      'other.md#nowhere',
    ]);
    expect(brokenLinks(tmp, 'doc.md')).toEqual([
      'doc.md:3: missing.md: no such file',
      'doc.md:3: other.md#there: no heading gives #there',
      'doc.md:3: ../../etc/passwd: leaves the repository',
      'doc.md:8: other.md#nowhere: no heading gives #nowhere',
    ]);
  });
});

describe('README.md and docs/', () => {
  it('every relative link and #anchor resolves', () => {
    expect(DOCS.length).toBeGreaterThan(10);
    expect(DOCS.flatMap((file) => brokenLinks(ROOT, file))).toEqual([]);
  });

  it('every page of docs/ can be reached from the README', () => {
    const reached = new Set(['README.md']);
    const queue = ['README.md'];
    while (queue.length > 0) {
      const file = queue.shift()!;
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const { target } of relativeLinks(text)) {
        const path = target.split('#')[0]!;
        if (!path.endsWith('.md')) continue;
        const next = relative(ROOT, join(ROOT, file, '..', path));
        if (!reached.has(next)) {
          reached.add(next);
          queue.push(next);
        }
      }
    }
    expect(DOCS.filter((f) => !reached.has(f))).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  const page = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
  /** Table rows whose first cell is a variable: [name, default cell]. */
  const rows = [...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` +\| ([^|]+)\|/gm)].map(
    (m) => [m[1]!, m[2]!.trim()] as const,
  );
  const names = Object.keys(envSchema.shape) as EnvName[];

  it('lists every variable the config reads, once, and no other', () => {
    expect(rows.map(([name]) => name).sort()).toEqual([...names].sort());
  });

  it("gives each variable the schema's default", () => {
    const wrong = rows.flatMap(([name, cell]) => {
      const value = schemaDefault(name as EnvName);
      // PATH's schema default is a fallback for an empty environment, not what a shell has
      if (value === undefined || name === 'PATH') return [];
      return cell.startsWith(`\`${value}\``) ? [] : [`${name}: "${cell}", schema: ${value}`];
    });
    expect(wrong).toEqual([]);
  });
});
