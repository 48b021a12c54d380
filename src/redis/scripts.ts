/**
 * Lua scripts: `lua/<name>-<numberOfKeys>.lua`, one file per atomic operation. A gateway module
 * declares each script once with {@link luaScript}, together with its reply table (reply name ->
 * code); the loader renders the file (includes inlined once each, their constants folded,
 * `--- @replies` replaced by that table as `local REPLY = {...}`), so the Lua and its TypeScript
 * decoder share one table.
 *
 * Scripts run by a plain EVALSHA, falling back to their ioredis `defineCommand` (which EVALs) when
 * the server's cache lacks them. Each script is declared in the gateway of the room that calls
 * it, which callers go through and which alone sees a KEYS array: in each of inventory/'s rooms
 * its protocol.ts (sale/, outbox/, catalogue/, idempotency/, rooms/, drop/), the rate limits'
 * (redis/rate-limit.ts) and the lock's (lock/protocol.ts); `npm run structure` counts any script
 * declared elsewhere (scriptsOutsideGateways, SCRIPT_GATEWAYS in tools/structure-counts.ts).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';

/** `lua/` next to `src/` (repo) or next to `dist/src/` (build copies it there). */
export const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'lua');

/** Reply name -> the number the script returns first (`-` in a name is `_` in Lua). */
export type ReplyTable = Readonly<Record<string, number>>;

type Connection = Redis | Cluster;
type Arg = string | number;

const FILE = /^([A-Za-z][A-Za-z0-9]*)-(\d+)\.lua$/;
const INCLUDE = /^--- @include "([A-Za-z0-9]+)"$/gm;
const REPLIES = /^--- @replies$/m;
/** An include's `local NAME = 'text'` line (NAME upper case): a constant the loader folds. */
const CONSTANT = /^local ([A-Z][A-Z0-9_]*) = ('[^'\\\n]*')\n/gm;

let files: Map<string, { file: string; numberOfKeys: number }> | undefined;

function scriptFiles() {
  if (!files) {
    files = new Map();
    for (const file of readdirSync(LUA_DIR)) {
      const m = FILE.exec(file);
      if (m) files.set(m[1]!, { file, numberOfKeys: Number(m[2]) });
    }
  }
  return files;
}

/**
 * Inlines `--- @include "name"` with `lua/includes/name.lua`, each helper once, recursively; the
 * includes' constants are taken out into `constants` (name -> Lua literal).
 */
function expandIncludes(lua: string, seen: Set<string>, constants: Map<string, string>): string {
  return lua.replace(INCLUDE, (_, name: string) => {
    if (seen.has(name)) return `-- (${name} already included)`;
    seen.add(name);
    const body = readFileSync(join(LUA_DIR, 'includes', `${name}.lua`), 'utf8')
      .trimEnd()
      .concat('\n')
      .replace(CONSTANT, (_line, constant: string, literal: string) => {
        constants.set(constant, literal);
        return '';
      });
    return expandIncludes(body.trimEnd(), seen, constants);
  });
}

/**
 * Writes each include constant's literal where the constant is named. A helper that named a
 * local instead would hold it as an upvalue, which Lua 5.1 builds on every call: with the
 * segment-state helpers that cost the deduct about 1 us (8 %) of Redis time per call.
 */
function foldConstants(lua: string, constants: ReadonlyMap<string, string>): string {
  if (constants.size === 0) return lua;
  const named = new RegExp(`\\b(${[...constants.keys()].join('|')})\\b`, 'g');
  return lua.replace(named, (constant) => constants.get(constant)!);
}

function replyTableLua(replies: ReplyTable): string {
  const fields = Object.entries(replies).map(([k, v]) => `${k.replaceAll('-', '_')} = ${v}`);
  return `local REPLY = { ${fields.join(', ')} }`;
}

/** Renders a script file: includes inlined, the reply table in place of `--- @replies`. */
export function renderScript(name: string, replies: ReplyTable): string {
  const found = scriptFiles().get(name);
  if (!found) throw new Error(`no script lua/${name}-N.lua`);
  const constants = new Map<string, string>();
  let lua = expandIncludes(readFileSync(join(LUA_DIR, found.file), 'utf8'), new Set(), constants);
  lua = foldConstants(lua, constants);
  const hasMarker = REPLIES.test(lua);
  if (Object.keys(replies).length > 0 && !hasMarker) {
    throw new Error(`lua/${found.file} has a reply table but no "--- @replies" line`);
  }
  if (hasMarker) lua = lua.replace(REPLIES, replyTableLua(replies));
  return lua;
}

/** Every script declared in this process: a connection gets them all at once. */
const declared: LuaScript[] = [];
/** How many of `declared` each connection has defined. */
const registered = new WeakMap<Connection, number>();

/**
 * Loads every declared script into the server's script cache (every master of a Cluster). Inside
 * a MULTI ioredis cannot fall back from EVALSHA to EVAL, so a node whose cache is empty (a
 * replica a failover promoted, a restarted server) answers NOSCRIPT there until this runs.
 */
export async function loadScripts(conn: Connection): Promise<void> {
  const nodes = 'nodes' in conn ? conn.nodes('master') : [conn];
  await Promise.all(nodes.flatMap((n) => declared.map((s) => n.script('LOAD', s.lua))));
}

/** Defines every declared script as a command on `conn` (each once per connection). */
export function registerScripts(conn: Connection): void {
  const done = registered.get(conn) ?? 0;
  if (done === declared.length) return;
  for (const s of declared.slice(done)) s.defineOn(conn);
  registered.set(conn, declared.length);
}

export class LuaScript<R extends ReplyTable = ReplyTable> {
  readonly numberOfKeys: number;
  readonly lua: string;
  readonly sha: string;
  private readonly command: string;
  private readonly names = new Map<number, keyof R & string>();

  constructor(
    readonly name: string,
    readonly replies: R,
  ) {
    const found = scriptFiles().get(name);
    if (!found) throw new Error(`no script lua/${name}-N.lua`);
    this.numberOfKeys = found.numberOfKeys;
    this.lua = renderScript(name, replies);
    this.sha = createHash('sha1').update(this.lua).digest('hex');
    this.command = `sk_${name}`;
    for (const [k, v] of Object.entries(replies)) this.names.set(v, k as keyof R & string);
    declared.push(this as unknown as LuaScript);
  }

  /** The reply name of a script's first element. @throws on a code the table does not know. */
  replyName(code: unknown): keyof R & string {
    const n = this.names.get(Number(code));
    if (n === undefined) throw new Error(`script ${this.name}: unexpected reply ${String(code)}`);
    return n;
  }

  private checkKeys(keys: readonly string[]): void {
    if (keys.length !== this.numberOfKeys) {
      throw new Error(`script ${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
  }

  /** @internal use {@link registerScripts} */
  defineOn(conn: Connection): void {
    conn.defineCommand(this.command, { numberOfKeys: this.numberOfKeys, lua: this.lua });
  }

  /**
   * Runs the script by a plain EVALSHA. ioredis's script command wraps every call in two more
   * promises and a reject closure (3.5 against 3.2 us of client CPU per call, measured); a
   * NOSCRIPT answer (a connection or node that never ran the script, a flushed or failed-over
   * cache) means the script did not run, so it is sent again through the script command, whose
   * EVAL loads it.
   */
  run<T>(conn: Connection, keys: readonly string[], args: readonly Arg[]): Promise<T> {
    this.checkKeys(keys);
    return (conn.evalsha(this.sha, keys.length, ...keys, ...args) as Promise<T>).catch(
      (err: unknown) => {
        if (err instanceof Error && err.message.includes('NOSCRIPT')) {
          return this.runLoading<T>(conn, keys, args);
        }
        throw err;
      },
    );
  }

  /** Runs the script through its ioredis command: EVALSHA, then EVAL when the cache lacks it. */
  runLoading<T>(conn: Connection, keys: readonly string[], args: readonly Arg[]): Promise<T> {
    this.checkKeys(keys);
    registerScripts(conn);
    const fn = (conn as unknown as Record<string, (...a: Arg[]) => Promise<T>>)[this.command]!;
    return fn.call(conn, ...keys, ...args);
  }

  /**
   * Queues the script on a pipeline or MULTI. ioredis copies a connection's scripts into a
   * pipeline when the pipeline is created: call {@link registerScripts} on the connection first.
   */
  queue(
    pipeline: ChainableCommander,
    keys: readonly string[],
    args: readonly Arg[],
  ): ChainableCommander {
    this.checkKeys(keys);
    const fn = (pipeline as unknown as Record<string, (...a: Arg[]) => ChainableCommander>)[
      this.command
    ];
    if (!fn) throw new Error(`script ${this.name}: registerScripts(connection) before pipeline()`);
    return fn.call(pipeline, ...keys, ...args);
  }
}

/** The name of the declared script whose SHA1 is `sha` (undefined: none declared here). */
export function scriptNameOf(sha: string): string | undefined {
  return declared.find((s) => s.sha === sha)?.name;
}

/** Declares the script `lua/<name>-N.lua` with its reply table (empty for scalar replies). */
export function luaScript<R extends ReplyTable>(name: string, replies: R = {} as R): LuaScript<R> {
  return new LuaScript(name, replies);
}
