/**
 * The layout the docs draw is the code's: docs/design/sale.md's layer table names every folder of
 * src/ (and no other), its paragraphs and table rows name every room of inventory/, http/ and
 * services/ (docs/events.md's table every room of events/), and its list of script gateways is
 * the files that declare scripts. A room or a gateway added or removed without the docs fails
 * here; so does one the rules of tools/structure-counts.ts do not know.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  EVENTS_ROOMS,
  HTTP_ROOMS,
  INVENTORY_ROOMS,
  SCRIPT_GATEWAYS,
  SERVICES_ROOMS,
} from '../../tools/structure-counts.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');
const SALE_MD = readFileSync(join(ROOT, 'docs', 'design', 'sale.md'), 'utf8');
const EVENTS_MD = readFileSync(join(ROOT, 'docs', 'events.md'), 'utf8');

const sorted = (names: Iterable<string>) => [...new Set(names)].sort();

/** The folders directly under `dir` (relative to src/). */
const foldersOf = (dir: string) =>
  sorted(
    readdirSync(join(SRC, dir), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name),
  );

/** Every `.ts` file under src/, as a path relative to src/. */
function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

/** The folder names (`name/` in backticks) a piece of markdown names, `except` left out. */
const namedFolders = (text: string, except: string) =>
  sorted(
    [...text.matchAll(/`([a-z][a-z-]*)\/`/g)].map((m) => m[1]!).filter((name) => name !== except),
  );

/** The paragraph of `markdown` that begins with `opening`, up to its first sentence's end. */
function firstSentence(markdown: string, opening: string): string {
  const at = markdown.indexOf(`\n${opening}`);
  expect(at, `a paragraph beginning ${opening}`).toBeGreaterThanOrEqual(0);
  const paragraph = markdown.slice(at + 1, markdown.indexOf('\n\n', at + 1));
  return paragraph.split(/\.\s/)[0]!;
}

/** The rows of the layer table: its first cells. */
function layerCells(markdown: string): string[] {
  const table = markdown.slice(markdown.indexOf('| layer '));
  return table
    .slice(0, table.indexOf('\n\n'))
    .split('\n')
    .slice(2)
    .map((row) => row.split('|')[1]!);
}

/** The row of the layer table whose first cell links `folder/`. */
function layerRow(markdown: string, folder: string): string {
  const row = markdown
    .split('\n')
    .find((line) => line.startsWith(`| [\`${folder}/\`](../../src/${folder})`));
  expect(row, `a layer table row for ${folder}/`).toBeDefined();
  return row!.split('|')[2]!;
}

describe("docs/design/sale.md's layout, against the code", () => {
  it('names every folder of src/ in the layer table, each linked where it is, and no other', () => {
    const linked = layerCells(SALE_MD).flatMap((cell) =>
      [...cell.matchAll(/\[`([a-z-]+)\/`\]\(\.\.\/\.\.\/src\/([a-z-]+)\)/g)].map((m) => {
        expect(m[2], `the link of ${m[1]}/`).toBe(m[1]);
        return m[1]!;
      }),
    );
    expect(sorted(linked)).toEqual(foldersOf('.'));
  });

  it.each([
    ['inventory', '`inventory/` is a room per idea'],
    ['http', '`http/` is rooms too'],
    ['services', '`services/` is a room per idea'],
  ])('names every room of %s/ in its paragraph, and no other', (folder, opening) => {
    expect(namedFolders(firstSentence(SALE_MD, opening), folder)).toEqual(foldersOf(folder));
  });

  it.each(['services', 'http'])('names every room of %s/ in its layer row', (folder) => {
    expect(namedFolders(layerRow(SALE_MD, folder), folder)).toEqual(foldersOf(folder));
  });

  it("names every room of events/ in docs/events.md's table of rooms, and no other", () => {
    const rows = [...EVENTS_MD.matchAll(/^\| `([a-z-]+)\/` +\|/gm)].map((m) => m[1]!);
    expect(sorted(rows)).toEqual(foldersOf('events'));
  });

  it('lists the script gateways: the files that declare scripts, as SCRIPT_GATEWAYS has them', () => {
    const paragraph = SALE_MD.slice(SALE_MD.indexOf('\nEvery Lua script is declared'));
    const listed = [
      ...paragraph.slice(0, paragraph.indexOf('\n\n', 1)).matchAll(/`([a-z/-]+\.ts)`/g),
    ].map((m) => m[1]!);
    const declaring = sourceFiles().filter((file) =>
      /\bluaScript\(\s*'/.test(readFileSync(join(SRC, file), 'utf8')),
    );
    expect(sorted(listed)).toEqual(sorted(declaring));
    expect(sorted(Object.values(SCRIPT_GATEWAYS))).toEqual(sorted(declaring));
  });
});

describe("tools/structure-counts.ts's rooms, against the folders", () => {
  it.each([
    ['inventory', INVENTORY_ROOMS, ['records']],
    ['http', HTTP_ROOMS, []],
    ['services', SERVICES_ROOMS, []],
    ['events', EVENTS_ROOMS, []],
  ])('knows every room of %s/ (its shared bottom aside)', (folder, rooms, bottom) => {
    expect(sorted([...rooms, ...bottom])).toEqual(foldersOf(folder));
  });
});
