/**
 * Loads `lua/<name>-<numberOfKeys>.lua` once and registers each file on a connection with ioredis
 * `defineCommand`, which calls it by SHA (EVALSHA) and falls back to EVAL after a script cache
 * flush (a Redis restart). Callers go through the typed gateways (lock/protocol.ts,
 * inventory/protocol.ts); they never see a KEYS array.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';

/** `lua/` next to `src/` (repo) or next to `dist/src/` (build copies it there). */
export const LUA_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'lua');

export interface ScriptDef {
  name: string;
  numberOfKeys: number;
  lua: string;
  sha: string;
}

const FILE = /^([A-Za-z][A-Za-z0-9]*)-(\d+)\.lua$/;
const INCLUDE = /^--- @include "([A-Za-z0-9]+)"$/gm;

/** Inlines `--- @include "name"` lines with `lua/includes/name.lua` (shared helpers). */
function expandIncludes(lua: string): string {
  return lua.replace(INCLUDE, (_, name: string) =>
    readFileSync(join(LUA_DIR, 'includes', `${name}.lua`), 'utf8').trimEnd(),
  );
}

let loaded: Map<string, ScriptDef> | undefined;

/** Reads every script file (once per process). */
export function scriptDefs(): Map<string, ScriptDef> {
  if (loaded) return loaded;
  loaded = new Map();
  for (const file of readdirSync(LUA_DIR).sort()) {
    const m = FILE.exec(file);
    if (!m) continue;
    const lua = expandIncludes(readFileSync(join(LUA_DIR, file), 'utf8'));
    loaded.set(m[1]!, {
      name: m[1]!,
      numberOfKeys: Number(m[2]),
      lua,
      sha: createHash('sha1').update(lua).digest('hex'),
    });
  }
  return loaded;
}

type Connection = Redis | Cluster;
const registered = new WeakSet<Connection>();
const commandName = (name: string) => `sk_${name}`;

/** Defines every script as a command on `redis` (idempotent). */
export function registerScripts(redis: Connection): void {
  if (registered.has(redis)) return;
  for (const def of scriptDefs().values()) {
    redis.defineCommand(commandName(def.name), { numberOfKeys: def.numberOfKeys, lua: def.lua });
  }
  registered.add(redis);
}

function definition(name: string, keys: readonly string[]): ScriptDef {
  const def = scriptDefs().get(name);
  if (!def) throw new Error(`no script lua/${name}-N.lua`);
  if (keys.length !== def.numberOfKeys) {
    throw new Error(`script ${name} takes ${def.numberOfKeys} keys, got ${keys.length}`);
  }
  return def;
}

type Arg = string | number;

/** Runs script `name` with `keys` and `args` (strings or numbers). */
export function runScript<T>(
  redis: Connection,
  name: string,
  keys: readonly string[],
  args: readonly Arg[],
): Promise<T> {
  definition(name, keys);
  registerScripts(redis);
  const command = (redis as unknown as Record<string, (...a: Arg[]) => Promise<T>>)[
    commandName(name)
  ]!;
  return command.call(redis, ...keys, ...args);
}

/** Queues script `name` on a pipeline or MULTI (the connection must have it registered). */
export function queueScript(
  pipeline: ChainableCommander,
  name: string,
  keys: readonly string[],
  args: readonly Arg[],
): ChainableCommander {
  definition(name, keys);
  const command = (pipeline as unknown as Record<string, (...a: Arg[]) => ChainableCommander>)[
    commandName(name)
  ]!;
  return command.call(pipeline, ...keys, ...args);
}
