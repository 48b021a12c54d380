/**
 * Markdown as GitHub renders it, for the link check: the anchors a file's headings get, and the
 * relative links (and images) it makes outside code. Plain text parsing, no dependency: fenced
 * blocks and inline code are skipped, so a `[x](y)` shown as code is not taken for a link.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * GitHub's anchor of a heading (github-slugger): the rendered text in lower case, every
 * character that is not a letter, mark, digit, connector (`_`), hyphen or space removed, then
 * each space a hyphen. `## The sale (`src/x`)` -> `the-sale-srcx`.
 */
export function slug(heading: string): string {
  return rendered(heading)
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The text a heading shows: links become their text, emphasis and code marks go. */
function rendered(text: string): string {
  return text
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[*`]/g, '');
}

/** Lines outside fenced code blocks (``` or ~~~), with inline code spans blanked. */
function proseLines(text: string): Array<{ line: string; n: number }> {
  const out: Array<{ line: string; n: number }> = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || marker.startsWith(fence))) {
      fence = fence ? undefined : marker;
      return;
    }
    if (!fence) out.push({ line, n: i + 1 });
  });
  return out;
}

/** Every anchor a file offers: its headings' slugs (repeats get -1, -2, ...) and HTML ids. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+\s*)?$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

export interface Link {
  line: number;
  target: string;
}

/** Links and images of a file whose target is inside the repository (no scheme, no `//`). */
export function relativeLinks(text: string): Link[] {
  const links: Link[] = [];
  // inline code is blanked per line; a span that wraps is rare in prose and holds no links here
  const withoutCode = (line: string) => line.replace(/`[^`]*`/g, (m) => ' '.repeat(m.length));
  for (const { line, n } of proseLines(text)) {
    const prose = withoutCode(line);
    const targets = [
      ...[...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map(
        (m) => m[1]!,
      ),
      ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!),
    ];
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:|^\/\//i.test(target)) continue; // http:, mailto:, //host
      links.push({ line: n, target });
    }
  }
  return links;
}

/**
 * What is wrong with each relative link of `file` (a path under `root`): a target that does not
 * exist or leaves the repository, an anchor no heading of the target gives, an anchor into a
 * file that is not markdown. Empty when every link resolves.
 */
export function brokenLinks(root: string, file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const problems: string[] = [];
  for (const { line, target } of relativeLinks(text)) {
    const at = `${file}:${line}: ${target}`;
    const [path = '', anchor] = decodeURI(target).split('#');
    const absolute = path === '' ? join(root, file) : resolve(dirname(join(root, file)), path);
    if (relative(root, absolute).startsWith('..')) {
      problems.push(`${at}: leaves the repository`);
      continue;
    }
    if (!existsSync(absolute)) {
      problems.push(`${at}: no such file`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(absolute).isDirectory() || !absolute.endsWith('.md')) {
      problems.push(`${at}: an anchor into something that is not a markdown file`);
    } else if (!anchorsOf(readFileSync(absolute, 'utf8')).has(anchor)) {
      problems.push(`${at}: no heading gives #${anchor}`);
    }
  }
  return problems;
}
