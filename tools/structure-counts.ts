/**
 * The storage-plumbing and habit counts, reproducible: `npm run structure` prints them.
 * test/project/structure.test.ts holds them to ceilings, so they can only go down (the goal is 0 for
 * services -> redis/db, and SQL only in repositories).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { META_FIELD, STATE_FIELD } from '../src/inventory/records/hash-fields.js';
import { hasReplies, replyShapes } from './lua-replies.js';
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
   * comments in src/ and lua/ that tell how a rule was found (`file:line: words`): a trial or a
   * run that saw or found something, an issue number, a "was" in brackets ({@link HISTORY}).
   * The rule stays in the comment; the story goes to the commit message or docs/decisions.md
   */
  historyComments: string[];
  /**
   * imports that break a rule between inventory/'s rooms (`rule: file -> file`): see
   * {@link INVENTORY_RULES}
   */
  inventoryRoomBreaches: string[];
  /** circles between inventory/'s rooms (its folders and the shared bottom's files) */
  inventoryCircles: string[];
  /** imports that break a rule between http/'s rooms (`rule: file -> file`): {@link HTTP_RULES} */
  httpRoomBreaches: string[];
  /** circles between http/'s rooms (its folders and the shared bottom's files) */
  httpCircles: string[];
  /**
   * imports that break a rule between services/'s rooms (`rule: file -> file`):
   * {@link SERVICES_RULES}
   */
  servicesRoomBreaches: string[];
  /** circles between services/'s rooms */
  servicesCircles: string[];
  /**
   * imports that break a rule between events/'s rooms (`rule: file -> file`):
   * {@link EVENTS_RULES}, and files outside events/ importing anything of it but its door
   */
  eventsRoomBreaches: string[];
  /** circles between events/'s rooms */
  eventsCircles: string[];
  /**
   * Lua scripts declared (`luaScript('name')`) outside their room's gateway, or by no gateway at
   * all (`file: name`): see {@link SCRIPT_GATEWAYS}
   */
  scriptsOutsideGateways: string[];
  /**
   * Script gateways at inventory/'s root, the shared bottom (`file: why`): a file there that
   * declares a script, loads the script module, is named in {@link SCRIPT_GATEWAYS}, is named
   * like a gateway (protocol, scripts) or holds a script's reply table (`X_REPLY =`). A room's
   * scripts are that room's.
   */
  scriptGatewaysAtInventoryRoot: string[];
  /**
   * Lua scripts that answer more than one shape (a scalar and a table, tables of different
   * lengths: tools/lua-replies.ts) without a `--- @replies` line naming their answers.
   */
  multiShapeScriptsWithoutReplies: string[];
  /**
   * hash fields spelled outside the codec of their record (`file:line: field`): in src/ and lua/,
   * any literal field name given to a hash command (the codecs, records/ and the hash includes,
   * excepted), whatever the record; in test/ and load-tests/, one given for a record hash (a
   * segment's state, a product's meta, a room, the catalogue). Hashes keyed by ids (buyers,
   * places) name their fields by variables, and are not counted.
   */
  recordFieldsOutsideCodecs: string[];
  /** {@link StructureCounts.historyComments}'s rule over the comments of test/ and tools/ */
  testHistoryComments: string[];
  /**
   * fixed sleeps in test/ (`file:line`): an awaited timer, `sleep(ms)` or a promise a bare
   * `setTimeout(resolve, ms)` settles, that is neither the pause of a loop with a deadline (a
   * poll) nor marked `// the scenario: <why>` (on its statement or the line above it: the
   * waiting IS the test, e.g. a lease left to run out, a load paced, time given to a wrong
   * thing to happen). A sleep that waits for something to happen is a `waitFor` on it instead
   */
  testSleepsUnmarked: string[];
  /**
   * retry loops in test/ with no deadline (`file:line`): a loop with no condition of its own
   * (`for (;;)`, `while (true)`, `do ... while (true)`), one that asks again while an answer's
   * `status` or `ok` says so (`while (res.status === 503) res = await ...`), or one that pauses
   * (awaits a timer) each time round and is not a `for` bounded by a count (`i < n`), whose condition and body hold no
   * deadline check: a condition on `Date.now()`, an `if` on `Date.now()`, a `deadline` or a
   * bound (`<`, `>`) that throws `new Error(...)`, or a call of `overdue()` (the check
   * `deadlineOf` makes); a load the test itself stops may be marked `// the scenario:`
   */
  testLoopsWithoutDeadline: string[];
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

/**
 * inventory/'s rooms, each a folder named for what it holds, over the shared bottom (the files
 * directly under inventory/, and records/): the rule each import between them keeps.
 */
export const INVENTORY_ROOMS = [
  'catalogue',
  'sale',
  'outbox',
  'idempotency',
  'rooms',
  'migrations',
  'drop',
  'draw',
];
const SHARED_BOTTOM = 'the shared bottom';

export const INVENTORY_RULES: Record<string, (from: string, to: string, file: string) => boolean> =
  {
    // the waiting rooms, the outbox and the migrations know the catalogue, never the sale
    'rooms/, outbox/, migrations/, drop/ and draw/ import no sale/': (from, to) =>
      ['rooms', 'outbox', 'migrations', 'drop', 'draw'].includes(from) && to === 'sale',
    // Idempotency-Key records are the purchase's business: the door hands them on, no room uses them
    'only the door (inventory/index.ts) imports idempotency/': (from, to, file) =>
      to === 'idempotency' && from !== 'idempotency' && file !== 'inventory/index.ts',
    // the bottom is below every room: protocol, records, layout, order ids, errors
    'the shared bottom imports no room': (from, to) =>
      from === SHARED_BOTTOM && INVENTORY_ROOMS.includes(to),
  };

/** http/'s rooms over its shared bottom (auth, problems, validation); its doors build the app. */
export const HTTP_ROOMS = ['routes', 'handlers', 'openapi', 'server'];
const HTTP_DOORS = ['http/app.ts', 'http/fast-path.ts'];

export const HTTP_RULES: Record<string, (from: string, to: string) => boolean> = {
  // the framework-free handlers and the server's plumbing know no route and no document
  'handlers/ and server/ import no routes/ and no openapi/': (from, to) =>
    ['handlers', 'server'].includes(from) && ['routes', 'openapi'].includes(to),
  'the shared bottom imports no room': (from, to) =>
    from === SHARED_BOTTOM && HTTP_ROOMS.includes(to),
};

/**
 * services/'s rooms, one per idea (docs/design/services.md), over a door (services/index.ts, the
 * only file the layers above import) and a shared bottom (same-signature.ts).
 */
export const SERVICES_ROOMS = [
  'purchase',
  'admission',
  'room',
  'orders',
  'operator',
  'dashboard',
  'draw',
  'fairness',
];
const SERVICES_DOORS = ['services/index.ts'];

export const SERVICES_RULES: Record<
  string,
  (from: string, to: string, file: string, target: string) => boolean
> = {
  // the read models show what the use cases did; they never run one
  'dashboard/ imports no use-case room': (from, to) =>
    from === 'dashboard' && SERVICES_ROOMS.includes(to) && to !== 'dashboard',
  // the purchase is the top of the use cases: nothing below it may reach back into it
  'only the door (services/index.ts) imports purchase/': (from, to) =>
    to === 'purchase' && from !== 'purchase' && from !== 'services/index.ts',
  // a room's insides are its own: another room goes through its index.ts
  "a room enters another only by that room's index.ts": (from, to, _file, target) =>
    SERVICES_ROOMS.includes(from) &&
    SERVICES_ROOMS.includes(to) &&
    from !== to &&
    target !== `services/${to}/index.ts`,
  'the layers above import only the door': (from, to) =>
    from === 'outside' && (SERVICES_ROOMS.includes(to) || to === SHARED_BOTTOM),
  'the shared bottom imports no room': (from, to) =>
    from === SHARED_BOTTOM && SERVICES_ROOMS.includes(to),
};

/**
 * events/'s rooms, one per idea (docs/events.md), each behind its own index.ts, under two doors:
 * events/index.ts (the only file the layers above import) and events/worker.ts (what a worker
 * process runs: the relay and the deliveries, wired). No file sits at the bottom.
 */
export const EVENTS_ROOMS = ['feed', 'endpoints', 'lanes', 'delivery', 'relay'];
const EVENTS_DOORS = ['events/index.ts', 'events/worker.ts'];

export const EVENTS_RULES: Record<
  string,
  (from: string, to: string, file: string, target: string) => boolean
> = {
  // an event's shape and its SQL stand on their own: who is sent what is told above them
  'feed/ imports no other room': (from, to) =>
    from === 'feed' && EVENTS_ROOMS.includes(to) && to !== 'feed',
  // the records of who takes what, and of what each endpoint is owed, know only the event
  'endpoints/ and lanes/ import no room but feed/': (from, to) =>
    ['endpoints', 'lanes'].includes(from) &&
    EVENTS_ROOMS.includes(to) &&
    ![from, 'feed'].includes(to),
  // the relay hands lanes on and asks for deliveries through the functions it is given
  'relay/ imports no delivery/': (from, to) => from === 'relay' && to === 'delivery',
  // a room's insides are its own: another room goes through its index.ts
  "a room enters another only by that room's index.ts": (from, to, _file, target) =>
    EVENTS_ROOMS.includes(from) &&
    EVENTS_ROOMS.includes(to) &&
    from !== to &&
    target !== `events/${to}/index.ts`,
  'the layers above import only the door': (from, to) =>
    from === 'outside' && (EVENTS_ROOMS.includes(to) || to === SHARED_BOTTOM),
  'the shared bottom imports no room': (from, to) =>
    from === SHARED_BOTTOM && EVENTS_ROOMS.includes(to),
};

/** Files outside events/ that import one of its files other than events/index.ts. */
function eventsBesideTheDoor(all: string[]): string[] {
  return all
    .filter((f) => top(f) !== 'events')
    .flatMap((f) =>
      importsOf(f)
        .filter((t) => top(t) === 'events' && rel(t) !== 'events/index.ts')
        .map((t) => `the layers above import only the door: ${rel(f)} -> ${rel(t)}`),
    );
}

/** The room of a file of src/ inside `top` (undefined outside it, and for its doors). */
function roomOf(
  file: string,
  top: string,
  rooms: readonly string[],
  doors: readonly string[],
): string | undefined {
  const parts = rel(file).split('/');
  if (parts[0] !== top || doors.includes(rel(file))) return undefined;
  return parts.length > 2 && rooms.includes(parts[1]!) ? parts[1] : SHARED_BOTTOM;
}

/** The imports between a folder's rooms: those that break a rule, and the circles. */
function folderRooms(
  all: string[],
  top: string,
  rooms: readonly string[],
  doors: readonly string[],
  rules: Record<string, (from: string, to: string, file: string, target: string) => boolean>,
): { breaches: string[]; circles: string[] } {
  const breaches: string[] = [];
  const arrows = new Map<string, Set<string>>();
  for (const f of all) {
    const from = roomOf(f, top, rooms, doors);
    for (const t of importsOf(f)) {
      const to = roomOf(t, top, rooms, doors);
      if (to === undefined) continue;
      const named = from ?? (doors.includes(rel(f)) ? rel(f) : 'outside');
      for (const [rule, breaks] of Object.entries(rules)) {
        if (breaks(named, to, rel(f), rel(t))) breaches.push(`${rule}: ${rel(f)} -> ${rel(t)}`);
      }
      if (from !== undefined && from !== to) {
        let out = arrows.get(from);
        if (!out) arrows.set(from, (out = new Set()));
        out.add(to);
      }
    }
  }
  return { breaches, circles: circlesOf(arrows) };
}

/** Every circle of a graph, once each (as found from its first room in a depth-first walk). */
function circlesOf(arrows: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const state = new Map<string, 'visiting' | 'done'>();
  const circles: string[] = [];
  const visit = (room: string, path: string[]) => {
    if (state.get(room) === 'done') return;
    if (state.get(room) === 'visiting') {
      circles.push([...path.slice(path.indexOf(room)), room].join(' -> '));
      return;
    }
    state.set(room, 'visiting');
    for (const next of arrows.get(room) ?? []) visit(next, [...path, room]);
    state.set(room, 'done');
  };
  for (const room of arrows.keys()) visit(room, []);
  return circles;
}

/**
 * One gateway file per room that calls Lua scripts, named protocol.ts in each of inventory/'s
 * rooms: the only file that declares them, with their key order, arguments and reply tables. A
 * script's room is told by its name; a script two rooms call is the room's whose record it
 * changes, and the other goes through that room's gateway.
 */
export const SCRIPT_GATEWAYS = {
  sale: 'inventory/sale/protocol.ts',
  outbox: 'inventory/outbox/protocol.ts',
  catalogue: 'inventory/catalogue/protocol.ts',
  idempotency: 'inventory/idempotency/protocol.ts',
  rooms: 'inventory/rooms/protocol.ts',
  drop: 'inventory/drop/protocol.ts',
  draw: 'inventory/draw/protocol.ts',
  rate: 'redis/rate-limit.ts',
  lock: 'lock/protocol.ts',
} as const;

const SCRIPT_ROOMS: Array<[RegExp, keyof typeof SCRIPT_GATEWAYS]> = [
  [/^(lock|fairLock)[A-Z]/, 'lock'],
  [/^rateLimit/, 'rate'],
  [/^room[A-Z]/, 'rooms'],
  [/^drop[A-Z]/, 'drop'],
  [/^draw[A-Z]/, 'draw'],
  [/^idempotency[A-Z]/, 'idempotency'],
  [/^deduct/, 'sale'],
  [/^(claimSettle|resolveOrder|outboxCut|saleHeld|restock|releaseMarker)$/, 'outbox'],
  [/^(seedSegment|beginSeed|(mark|clear)SoldOut|active[A-Z]\w*|catalogueNumber)$/, 'catalogue'],
  [/^segmentWindow$/, 'catalogue'],
];

/** The room whose gateway declares the script `name` (undefined: no room claims it). */
export function scriptRoom(name: string): keyof typeof SCRIPT_GATEWAYS | undefined {
  return SCRIPT_ROOMS.find(([pattern]) => pattern.test(name))?.[1];
}

const gatewayOf = (name: string) => {
  const room = scriptRoom(name);
  return room ? SCRIPT_GATEWAYS[room] : '(no room in SCRIPT_ROOMS)';
};

function scriptsOutsideGateways(all: string[]): string[] {
  const declared = new Set<string>();
  const outside = all.flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(/\bluaScript\(\s*'([A-Za-z0-9]+)'/g)].flatMap((m) => {
      declared.add(m[1]!);
      return gatewayOf(m[1]!) === rel(f) ? [] : [`${rel(f)}: ${m[1]}`];
    }),
  );
  const undeclared = luaFiles()
    .filter((f) => !f.startsWith('includes/'))
    .map((f) => f.replace(/-\d+\.lua$/, ''))
    .filter((name) => !declared.has(name))
    .map((name) => `${gatewayOf(name)}: ${name} (declared by no gateway)`);
  return [...outside, ...undeclared];
}

/** The rules on Lua scripts, as `npm run structure` names them. */
const SCRIPT_RULES = [
  "each script is declared in its room's gateway (scriptsOutsideGateways)",
  "no script gateway at the inventory's root (scriptGatewaysAtInventoryRoot)",
  'every script that answers more than one shape has --- @replies (multiShapeScriptsWithoutReplies)',
];

function scriptGatewaysAtInventoryRoot(all: string[]): string[] {
  const gateways = new Set<string>(Object.values(SCRIPT_GATEWAYS));
  return all
    .filter((f) => /^inventory\/[^/]+\.ts$/.test(rel(f)))
    .flatMap((f) => {
      const text = readFileSync(f, 'utf8');
      const why = [
        /\bluaScript\(/.test(text) ? 'declares a script' : '',
        importsOf(f).some((t) => rel(t) === 'redis/scripts.ts') ? 'loads the script module' : '',
        gateways.has(rel(f)) ? 'named in SCRIPT_GATEWAYS' : '',
        /(protocol|scripts)[^/]*\.ts$/.test(f) ? 'named like a gateway' : '',
        /\b[A-Z][A-Z0-9_]*_REPLY\s*=/.test(text) ? 'holds a reply table' : '',
      ].filter(Boolean);
      return why.length > 0 ? [`${rel(f)}: ${why.join(', ')}`] : [];
    });
}

function multiShapeScriptsWithoutReplies(): string[] {
  return luaFiles()
    .filter((f) => !f.startsWith('includes/'))
    .flatMap((f) => {
      const lua = readFileSync(join(LUA_DIR, f), 'utf8');
      const shapes = replyShapes(lua);
      return shapes.length > 1 && !hasReplies(lua) ? [`lua/${f}: ${shapes.join(', ')}`] : [];
    });
}

/** The hash commands, and which of their arguments (after the key) name fields. */
const HASH_COMMANDS: Record<string, 'one' | 'all' | 'pairs'> = {
  hget: 'one',
  hexists: 'one',
  hincrby: 'one',
  hincrbyfloat: 'one',
  hsetnx: 'one',
  hmget: 'all',
  hdel: 'all',
  hset: 'pairs',
};
/** The includes that define a hash record's fields (lua/includes/). */
const HASH_INCLUDES = ['productMeta', 'segmentState', 'roomState', 'catalogueHash', 'drawState'];
/** The record hashes, by the key builder's names: what a test or a bench may read or write. */
const RECORD_KEY = /(\.(state|meta|room|draw)|\.catalogue\(\))$/;

const fieldPositions = (command: string, args: number) =>
  Array.from({ length: args }, (_, i) => i).filter((i) => {
    const kind = HASH_COMMANDS[command]!;
    return i > 0 && (kind === 'all' || (kind === 'one' ? i === 1 : i % 2 === 1));
  });

/** Literal field names of the hash commands of a TypeScript file (`line: field`). */
function tsHashFields(file: string, keyed: (key: string) => boolean): string[] {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    if (
      ts.isCallExpression(n) &&
      ts.isPropertyAccessExpression(n.expression) &&
      HASH_COMMANDS[n.expression.name.text] !== undefined &&
      n.arguments.length > 1 &&
      keyed(n.arguments[0]!.getText(sf))
    ) {
      for (const i of fieldPositions(n.expression.name.text, n.arguments.length)) {
        const arg = n.arguments[i]!;
        const literal =
          ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)
            ? arg.text
            : ts.isTemplateExpression(arg) && arg.head.text !== ''
              ? `${arg.head.text}...`
              : undefined;
        if (literal === undefined) continue;
        const line = sf.getLineAndCharacterOfPosition(arg.getStart(sf)).line + 1;
        found.push(`${line}: ${literal}`);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

/** Literal field names of the hash commands of a Lua file (`line: field`), comments left out. */
export function luaHashFields(lua: string): string[] {
  const code = lua.replace(/--\[\[[\s\S]*?\]\]/g, (c) => c.replace(/[^\n]/g, ' '));
  const clean = code.replace(/--[^\n]*/g, (c) => ' '.repeat(c.length));
  const found: string[] = [];
  for (const m of clean.matchAll(/redis\.call\(\s*'(H[A-Z]+)'/g)) {
    const command = m[1]!.toLowerCase();
    if (HASH_COMMANDS[command] === undefined) continue;
    // the call's arguments, split at its own commas
    const args: string[] = [];
    let depth = 0;
    let arg = '';
    for (let i = m.index + m[0].length; i < clean.length; i++) {
      const c = clean[i]!;
      if (c === '(' || c === '{') depth++;
      if ((c === ')' || c === '}') && depth-- === 0) break;
      if (c === ',' && depth === 0) {
        args.push(arg);
        arg = '';
      } else arg += c;
    }
    args.push(arg);
    // args[0] is what followed the command name: empty; the key is args[1]
    const line = clean.slice(0, m.index).split('\n').length;
    for (const i of fieldPositions(command, args.length - 1)) {
      const field = /^\s*'([^']*)'/.exec(args[i + 1]!);
      if (field) found.push(`${line}: ${field[1]}`);
    }
  }
  return found;
}

function recordFieldsOutsideCodecs(all: string[]): string[] {
  const codec = (f: string) => rel(f).startsWith('inventory/records/');
  const fromSrc = all
    .filter((f) => !codec(f))
    .flatMap((f) => tsHashFields(f, () => true).map((hit) => `src/${rel(f)}:${hit}`));
  const fromLua = luaFiles()
    .filter((f) => !HASH_INCLUDES.some((name) => f === `includes/${name}.lua`))
    .flatMap((f) =>
      luaHashFields(readFileSync(join(LUA_DIR, f), 'utf8')).map((hit) => `lua/${f}:${hit}`),
    );
  const root = join(SRC, '..');
  const fromTests = ['test', 'load-tests']
    .flatMap((dir) => files(join(root, dir)))
    .flatMap((f) =>
      tsHashFields(f, (key) => RECORD_KEY.test(key)).map((hit) => `${relative(root, f)}:${hit}`),
    );
  return [...fromSrc, ...fromLua, ...fromTests];
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
  const rooms = folderRooms(
    all,
    'inventory',
    INVENTORY_ROOMS,
    ['inventory/index.ts'],
    INVENTORY_RULES,
  );
  const http = folderRooms(all, 'http', HTTP_ROOMS, HTTP_DOORS, HTTP_RULES);
  const services = folderRooms(all, 'services', SERVICES_ROOMS, SERVICES_DOORS, SERVICES_RULES);
  const events = folderRooms(all, 'events', EVENTS_ROOMS, EVENTS_DOORS, EVENTS_RULES);
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
    inventoryRoomBreaches: rooms.breaches,
    inventoryCircles: rooms.circles,
    httpRoomBreaches: http.breaches,
    httpCircles: http.circles,
    servicesRoomBreaches: services.breaches,
    servicesCircles: services.circles,
    eventsRoomBreaches: [...events.breaches, ...eventsBesideTheDoor(all)],
    eventsCircles: events.circles,
    scriptsOutsideGateways: scriptsOutsideGateways(all),
    scriptGatewaysAtInventoryRoot: scriptGatewaysAtInventoryRoot(all),
    multiShapeScriptsWithoutReplies: multiShapeScriptsWithoutReplies(),
    recordFieldsOutsideCodecs: recordFieldsOutsideCodecs(all),
    testHistoryComments: testHistoryComments(),
    testSleepsUnmarked: testHabits().sleeps,
    testLoopsWithoutDeadline: testHabits().loops,
  };
}

const ROOT = join(SRC, '..');
const TEST = join(ROOT, 'test');

let testHistory: string[] | undefined;

/** Comments that tell history in test/ and tools/ (see {@link StructureCounts.historyComments}). */
function testHistoryComments(): string[] {
  testHistory ??= [...files(TEST), ...files(join(ROOT, 'tools'))].flatMap((f) =>
    tsComments(f).flatMap(({ line, text }) =>
      text
        .split('\n')
        .flatMap((words, i) =>
          HISTORY.some((h) => h.test(words))
            ? [`${relative(ROOT, f)}:${line + i}: ${words.trim()}`]
            : [],
        ),
    ),
  );
  return testHistory;
}

/** An awaited timer: `sleep(ms)`, or `setTimeout(resolve, ms)` settling a promise. */
function isSleep(n: ts.Node): n is ts.CallExpression {
  if (!ts.isCallExpression(n) || !ts.isIdentifier(n.expression)) return false;
  const name = n.expression.text;
  return name === 'sleep' || (name === 'setTimeout' && ts.isIdentifier(n.arguments[0]!));
}

const isLoop = (n: ts.Node): n is ts.IterationStatement =>
  ts.isForStatement(n) || ts.isWhileStatement(n) || ts.isDoStatement(n);

/** A loop with no condition of its own: `for (;;)`, `while (true)`, `do ... while (true)`. */
const endless = (n: ts.IterationStatement) =>
  ts.isForStatement(n)
    ? n.condition === undefined
    : (ts.isWhileStatement(n) || ts.isDoStatement(n)) &&
      n.expression.kind === ts.SyntaxKind.TrueKeyword;

/** A loop that asks again while the answer says so: `while (res.status === 503) res = await ...`. */
function retriesOnAnswer(n: ts.IterationStatement): boolean {
  if (!ts.isWhileStatement(n) && !ts.isDoStatement(n)) return false;
  if (!/\.(status|ok)\b/.test(n.expression.getText())) return false;
  let awaits = false;
  const look = (c: ts.Node): void => {
    if (ts.isAwaitExpression(c)) awaits = true;
    else if (!ts.isFunctionLike(c)) ts.forEachChild(c, look);
  };
  look(n.statement);
  return awaits;
}

/** A `for` loop bounded by a count: an incrementor, and a condition comparing with `<`/`<=`. */
const counted = (n: ts.IterationStatement) =>
  ts.isForStatement(n) &&
  n.incrementor !== undefined &&
  n.condition !== undefined &&
  /<=?/.test(n.condition.getText());

/** A deadline check in a loop's condition or body (see {@link StructureCounts}). */
function hasDeadline(loop: ts.IterationStatement): boolean {
  let found = false;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'overdue')
      found = true;
    if (ts.isIfStatement(n) && /Date\.now\(\)|deadline|[<>]/i.test(n.expression.getText())) {
      if (/^\{?\s*throw new Error\(/.test(n.thenStatement.getText())) found = true;
    }
    // a nested function's checks are its own
    if (!ts.isFunctionLike(n)) ts.forEachChild(n, visit);
  };
  ts.forEachChild(loop, visit);
  const condition = ts.isForStatement(loop)
    ? loop.condition
    : (loop as ts.WhileStatement | ts.DoStatement).expression;
  return found || /Date\.now\(\)/.test(condition?.getText() ?? '');
}

/** The statement a node is part of, for its comments. */
function statementOf(n: ts.Node): ts.Node {
  let at = n;
  while (at.parent && !ts.isBlock(at.parent) && !ts.isSourceFile(at.parent)) {
    if (ts.isCaseClause(at.parent) || isLoop(at.parent) || ts.isIfStatement(at.parent)) break;
    at = at.parent;
  }
  return at;
}

/** `// the scenario:` on the sleep's statement, its line or the comment just above it. */
function markedScenario(text: string, n: ts.Node): boolean {
  const stmt = statementOf(n);
  const comments = [
    ...(ts.getLeadingCommentRanges(text, stmt.getFullStart()) ?? []),
    ...(ts.getTrailingCommentRanges(text, stmt.end) ?? []),
  ].map((r) => text.slice(r.pos, r.end));
  const lineStart = text.lastIndexOf('\n', n.getStart()) + 1;
  const lineEnd = text.indexOf('\n', n.end);
  const line = text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd);
  return [...comments, line].some((c) => /the scenario:/.test(c));
}

let habits: { sleeps: string[]; loops: string[] } | undefined;

/** Fixed sleeps and retry loops without a deadline, in test/ (see {@link StructureCounts}). */
function testHabits(): { sleeps: string[]; loops: string[] } {
  if (habits) return habits;
  const sleeps: string[] = [];
  const loops: string[] = [];
  for (const file of files(TEST)) {
    const text = readFileSync(file, 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const at = (n: ts.Node) =>
      `${relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
    /** The pause of a poll: the nearest loop around the sleep checks a deadline. */
    const polls = (n: ts.Node) => {
      let at = n.parent;
      while (at && !isLoop(at)) at = at.parent;
      return at !== undefined && hasDeadline(at);
    };
    const visit = (n: ts.Node): void => {
      if (isLoop(n)) {
        let pauses = false;
        const look = (c: ts.Node): void => {
          if (isSleep(c)) pauses = true;
          else if (!isLoop(c)) ts.forEachChild(c, look);
        };
        ts.forEachChild(n, look);
        const retries = endless(n) || retriesOnAnswer(n) || (pauses && !counted(n));
        if (retries && !hasDeadline(n) && !markedScenario(text, n)) loops.push(at(n));
        ts.forEachChild(n, visit);
        return;
      }
      // the timer a sleep helper is made of is not itself a sleep
      const helper =
        ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === 'sleep';
      if (helper) return;
      if (isSleep(n) && !polls(n) && !markedScenario(text, n)) sleeps.push(at(n));
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  habits = { sleeps, loops };
  return habits;
}

if (process.argv[1] === import.meta.filename) {
  const counts = structureCounts();
  for (const [name, list] of Object.entries(counts)) {
    console.log(`${name}: ${list.length}`);
    for (const item of list) console.log(`  ${item}`);
  }
  console.log(`inventory/'s rules (inventoryRoomBreaches):`);
  for (const rule of Object.keys(INVENTORY_RULES)) console.log(`  ${rule}`);
  console.log(`http/'s rules (httpRoomBreaches):`);
  for (const rule of Object.keys(HTTP_RULES)) console.log(`  ${rule}`);
  console.log(`services/'s rules (servicesRoomBreaches):`);
  for (const rule of Object.keys(SERVICES_RULES)) console.log(`  ${rule}`);
  console.log(`events/'s rules (eventsRoomBreaches):`);
  for (const rule of Object.keys(EVENTS_RULES)) console.log(`  ${rule}`);
  console.log(`the scripts' rules:`);
  for (const rule of SCRIPT_RULES) console.log(`  ${rule}`);
  console.log(
    JSON.stringify(Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v.length]))),
  );
}
