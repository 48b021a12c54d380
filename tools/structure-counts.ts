/**
 * The storage-plumbing counts of issue 28 §1, reproducible: `npm run structure` prints them.
 * test/structure.test.ts holds them to ceilings, so they can only go down (the goal is 0 for
 * services -> redis/db, and SQL only in repositories).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

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
