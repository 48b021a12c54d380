/**
 * The storage-plumbing counts of issue 28 §1, reproducible: `npm run structure` prints them.
 * test/structure.test.ts holds them to ceilings, so they can only go down (the goal is 0 for
 * services -> redis/db, and SQL only in repositories).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { META_FIELD, STATE_FIELD } from '../src/inventory/records/hash-fields.js';
import { LUA_DIR } from '../src/redis/scripts.js';

const SRC = join(import.meta.dirname, '..', 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const rel = (p: string) => relative(SRC, p);
const top = (p: string) => rel(p).split('/')[0]!;

/** Relative imports of a file, resolved to src paths (`.js` specifiers name `.ts` files). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'(\.[^']+)'/g)].map(
    (m) => m[1]!,
  );
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** A Kysely query builder call or a raw sql`` template: the file speaks SQL. */
const SQL = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql[<`]/;

/** Files that may speak SQL: the repositories (and the database layer itself). */
const isRepository = (f: string) => top(f) === 'db' || /(^|[/-])repository\.ts$/.test(rel(f));

export interface StructureCounts {
  /** import edges from services/ into redis/ or db/ */
  servicesToStorage: string[];
  /** import edges from orders/ into redis/ or db/ */
  ordersToStorage: string[];
  /** files outside redis/ importing the Redis client module */
  redisClientImporters: string[];
  /** files outside redis/ importing the key builder */
  keysImporters: string[];
  /** files with SQL that are not repositories (or db/) */
  sqlOutsideRepositories: string[];
  /**
   * one-letter parameters of named functions and methods (`file:line name`): a name should say
   * what the value is; a comparator's (a, b) and an inline callback's are left alone
   */
  oneLetterParams: string[];
  /**
   * record formats spelled outside the Lua include that defines each (`file: what`): the buyer
   * marker, the spill claim, a product meta or segment-state field name
   */
  luaRecordFormatsOutsideIncludes: string[];
  /**
   * comments in src/ and lua/ that tell how a rule was found (`file:line: words`): "a black-box
   * trial saw ...", "a chaos run found ...", "issue 40", "(was ...)". The rule stays in the
   * comment; the story goes to the commit message or docs/decisions.md
   */
  historyComments: string[];
}

/** Every Lua file: the scripts and the includes, by their path under lua/. */
export const luaFiles = () => [
  ...readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua')),
  ...readdirSync(join(LUA_DIR, 'includes')).map((f) => `includes/${f}`),
];

/** The string literals of Lua code, comments left out. */
export function stringLiterals(lua: string): string[] {
  const code = lua.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, '');
  return [...code.matchAll(/'([^'\\\n]*)'|"([^"\\\n]*)"/g)].map((m) => m[1] ?? m[2]!);
}

/** Each record format is parsed and written by its include only (lua/includes/). */
function luaRecordFormatsOutsideIncludes(): string[] {
  const owners: Record<string, readonly string[]> = {
    'includes/productMeta.lua': Object.values(META_FIELD),
    'includes/segmentState.lua': Object.values(STATE_FIELD),
  };
  const fields = new Set<string>([...Object.values(META_FIELD), ...Object.values(STATE_FIELD)]);
  return luaFiles().flatMap((f) => {
    const text = readFileSync(join(LUA_DIR, f), 'utf8');
    const script = !f.startsWith('includes/');
    return [
      // the marker's "<units>:<orders>" pattern, or its writing with ':'
      script && (/%d\+\):\(/.test(text) || /\.\. ':' \.\./.test(text))
        ? [`${f}: buyer marker`]
        : [],
      // the claim's "<order>|<qty>|<at>" pattern, or its writing with '|'
      script && (/\[\^\|\]/.test(text) || /\.\. '\|' \.\./.test(text)) ? [`${f}: spill claim`] : [],
      stringLiterals(text)
        .filter((lit) => fields.has(lit) && !owners[f]?.includes(lit))
        .map((lit) => `${f}: '${lit}'`),
    ].flat();
  });
}

/** Words of a comment that tells history rather than the rule. */
const HISTORY = [
  /\bblack-box trial\b/i,
  /\b(?:chaos|soak|bench|test) run (?:saw|found|showed)\b/i,
  /\b(?:a|the) (?:trial|run) (?:saw|found)\b/i,
  /\bissue \d+\b/i,
  /\(was\b[^)]*\)/,
  /\bused to\b/i,
];

/** The comments of a TypeScript file, each with the line it starts on. */
function tsComments(file: string): Array<{ line: number; text: string }> {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const seen = new Map<number, { line: number; text: string }>();
  const take = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      const line = sf.getLineAndCharacterOfPosition(r.pos).line + 1;
      seen.set(r.pos, { line, text: text.slice(r.pos, r.end) });
    }
  };
  const visit = (n: ts.Node): void => {
    take(ts.getLeadingCommentRanges(text, n.pos));
    take(ts.getTrailingCommentRanges(text, n.end));
    for (const c of n.getChildren(sf)) visit(c);
  };
  visit(sf);
  return [...seen.values()];
}

/** The comments of a Lua file (`--` lines and `--[[ ]]` blocks), each with its first line. */
function luaComments(text: string): Array<{ line: number; text: string }> {
  const lineAt = (at: number) => text.slice(0, at).split('\n').length;
  return [...text.matchAll(/--\[\[[\s\S]*?\]\]|--[^\n]*/g)].map((m) => ({
    line: lineAt(m.index),
    text: m[0],
  }));
}

/** Comments that tell history (see {@link StructureCounts.historyComments}). */
function historyComments(): string[] {
  const commented = [
    ...files(SRC).map((f) => ({ name: `src/${rel(f)}`, comments: tsComments(f) })),
    ...luaFiles().map((f) => ({
      name: `lua/${f}`,
      comments: luaComments(readFileSync(join(LUA_DIR, f), 'utf8')),
    })),
  ];
  return commented.flatMap(({ name, comments }) =>
    comments.flatMap(({ line, text }) =>
      text
        .split('\n')
        .flatMap((words, i) =>
          HISTORY.some((h) => h.test(words)) ? [`${name}:${line + i}: ${words.trim()}`] : [],
        ),
    ),
  );
}

/** Parameters named by one letter, in functions and methods that have a name. */
function oneLetterParams(file: string): string[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const named =
      ts.isFunctionDeclaration(n) ||
      ts.isMethodDeclaration(n) ||
      ts.isMethodSignature(n) ||
      ts.isConstructorDeclaration(n) ||
      ((ts.isArrowFunction(n) || ts.isFunctionExpression(n)) &&
        (ts.isVariableDeclaration(n.parent) ||
          ts.isPropertyAssignment(n.parent) ||
          ts.isPropertyDeclaration(n.parent)));
    if (named) {
      const names = (n as ts.SignatureDeclaration).parameters.map((p) => p.name.getText(sf));
      const comparator = names.join(',') === 'a,b';
      for (const [i, name] of names.entries()) {
        if (!comparator && /^[a-z]$/.test(name)) {
          const at = (n as ts.SignatureDeclaration).parameters[i]!.getStart(sf);
          found.push(`${rel(file)}:${sf.getLineAndCharacterOfPosition(at).line + 1} ${name}`);
        }
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

export function structureCounts(): StructureCounts {
  const all = files(SRC);
  const edges = (layer: string) =>
    all
      .filter((f) => top(f) === layer)
      .flatMap((f) =>
        importsOf(f)
          .filter((t) => ['redis', 'db'].includes(top(t)))
          .map((t) => `${rel(f)} -> ${rel(t)}`),
      );
  const importing = (target: string) =>
    all.filter((f) => top(f) !== 'redis' && importsOf(f).some((t) => rel(t) === target)).map(rel);
  return {
    servicesToStorage: edges('services'),
    ordersToStorage: edges('orders'),
    redisClientImporters: importing('redis/connection.ts'),
    keysImporters: importing('redis/keys.ts'),
    sqlOutsideRepositories: all
      .filter((f) => !isRepository(f) && SQL.test(readFileSync(f, 'utf8')))
      .map(rel),
    oneLetterParams: all.flatMap(oneLetterParams),
    luaRecordFormatsOutsideIncludes: luaRecordFormatsOutsideIncludes(),
    historyComments: historyComments(),
  };
}

if (process.argv[1] === import.meta.filename) {
  const counts = structureCounts();
  for (const [name, list] of Object.entries(counts)) {
    console.log(`${name}: ${list.length}`);
    for (const item of list) console.log(`  ${item}`);
  }
  console.log(
    JSON.stringify(Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v.length]))),
  );
}
