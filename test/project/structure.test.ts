/**
 * The shape of src/, checked: imports only run down the layers (config <- redis/db <- lock <-
 * inventory/access <- orders <- services <- http <- composition <- cli), no import cycle, no file over
 * 350 lines. A new module that breaks the shape fails here, with the offending import named.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { replyShapes } from '../../tools/lua-replies.js';
import { structureCounts } from '../../tools/structure-counts.js';

const SRC = join(import.meta.dirname, '..', '..', 'src');

/** Layer of each top-level folder or file of src/ (lower may not import higher). */
const LAYERS: Record<string, number> = {
  config: 0,
  'errors.ts': 0,
  'ids.ts': 0,
  'log.ts': 0,
  'metrics.ts': 0,
  'lifecycle.ts': 0,
  'outages.ts': 0,
  'version.ts': 0,
  types: 0,
  // the draw's arithmetic and its beacon (Merkle tree, ranks, drand chains): no project import
  draw: 0,
  redis: 1,
  db: 1,
  launcher: 1,
  lock: 2,
  inventory: 3,
  // who may come in (rate-limit buckets, admin sessions): Redis stores beside the sale's
  access: 3,
  orders: 4,
  // order events and their webhooks: beside orders, over the same floors
  events: 4,
  services: 5,
  http: 6,
  composition: 7,
  cli: 8,
  'cli.ts': 8,
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const all = files(SRC);
const rel = (p: string) => relative(SRC, p);
const top = (p: string) => rel(p).split('/')[0]!;

/** Relative imports of a file, resolved to src paths (`.js` specifiers name `.ts` files). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+'(\.[^']+)'/g)].map(
    (m) => m[1]!,
  );
  for (const m of text.matchAll(/import\('(\.[^']+)'\)/g)) specs.push(m[1]!);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

describe('src/ layout', () => {
  it('puts every file in a layer', () => {
    const unplaced = all.filter((f) => LAYERS[top(f)] === undefined).map(rel);
    expect(unplaced).toEqual([]);
  });

  it('imports only from its own layer or lower ones', () => {
    const upward: string[] = [];
    for (const f of all) {
      for (const target of importsOf(f)) {
        const from = LAYERS[top(f)]!;
        const to = LAYERS[top(target)];
        if (to === undefined || to > from) upward.push(`${rel(f)} -> ${rel(target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps HTTP away from storage, and the CLI entry away from HTTP', () => {
    const bad = all.flatMap((f) =>
      importsOf(f)
        .filter(
          (t) =>
            (top(f) === 'http' && ['redis', 'db'].includes(top(t))) ||
            (rel(f) === 'cli.ts' && top(t) === 'http'),
        )
        .map((t) => `${rel(f)} -> ${rel(t)}`),
    );
    expect(bad).toEqual([]);
  });

  it('has no import cycle', () => {
    const graph = new Map(all.map((f) => [f, importsOf(f)]));
    const state = new Map<string, 'visiting' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, path: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'visiting') {
        cycles.push([...path.slice(path.indexOf(f)), f].map(rel).join(' -> '));
        return;
      }
      state.set(f, 'visiting');
      for (const t of graph.get(f) ?? []) visit(t, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of all) visit(f, []);
    expect(cycles).toEqual([]);
  });

  it('has no file over 350 lines', () => {
    const long = all
      .map((f) => [rel(f), readFileSync(f, 'utf8').split('\n').length] as const)
      .filter(([, n]) => n > 350);
    expect(long).toEqual([]);
  });

  // One gateway per storage: `npm run structure` lists these counts. A service takes
  // ports (small interfaces it declares), never a Redis client, keys or a Db; the stores behind
  // them live in inventory/ and access/ (the Redis doors) and the repositories (SQL). orders/ reaches storage
  // only through its repositories and BullMQ's connection.
  it('has no service import Redis or the database', () => {
    expect(structureCounts().servicesToStorage).toEqual([]);
  });

  // A parameter says what it holds (a comparator's (a, b) and inline callbacks aside)
  it('names no parameter of a named function by one letter', () => {
    expect(structureCounts().oneLetterParams).toEqual([]);
  });

  // A comment says the rule; how it was found goes to the commit message or docs/decisions.md
  // (tools/structure-counts.ts's HISTORY lists the words that tell a story)
  it('tells no history in the comments of src/ and lua/', () => {
    expect(structureCounts().historyComments).toEqual([]);
  });

  // inventory/ is rooms named for what they hold (catalogue/, sale/, outbox/,
  // idempotency/, rooms/, migrations/) over a shared bottom; `npm run structure` prints the rules
  it("keeps inventory/'s rooms to their rules, with no circle between them", () => {
    const c = structureCounts();
    expect(c.inventoryRoomBreaches).toEqual([]);
    expect(c.inventoryCircles).toEqual([]);
  });

  // and http/: routes/, handlers/ (framework-free), openapi/ and server/ over a shared bottom
  it("keeps http/'s rooms to their rules, with no circle between them", () => {
    const c = structureCounts();
    expect(c.httpRoomBreaches).toEqual([]);
    expect(c.httpCircles).toEqual([]);
  });

  // and services/: one room per idea (purchase/, admission/, room/, orders/, operator/,
  // dashboard/) over a door and a shared bottom; the read models run no use case
  it("keeps services/'s rooms to their rules, with no circle between them", () => {
    const c = structureCounts();
    expect(c.servicesRoomBreaches).toEqual([]);
    expect(c.servicesCircles).toEqual([]);
  });

  // and events/: feed/, endpoints/, lanes/, delivery/ and relay/, each behind its index.ts, under
  // one door for the layers above (and the worker's wiring); the relay knows no delivery
  it("keeps events/'s rooms to their rules, with no circle between them", () => {
    const c = structureCounts();
    expect(c.eventsRoomBreaches).toEqual([]);
    expect(c.eventsCircles).toEqual([]);
  });

  // One gateway file per room that calls Lua scripts, none at inventory/'s root, every script
  // of several answer shapes with --- @replies, and a hash record's field names
  // spelled only by its codec (records/ and its Lua include)
  it("declares every Lua script in its room's gateway, none at inventory/'s root, and spells record fields in codecs only", () => {
    const c = structureCounts();
    expect(c.scriptsOutsideGateways).toEqual([]);
    expect(c.scriptGatewaysAtInventoryRoot).toEqual([]);
    expect(c.multiShapeScriptsWithoutReplies).toEqual([]);
    expect(c.recordFieldsOutsideCodecs).toEqual([]);
  });

  it("reads a script's answer shapes from its own returns, not its local functions'", () => {
    const lua = [
      '--[[ Returns {} or {a, b}: return 1 in a comment ]]',
      'local function phase(x)',
      '  if x then return {x, x, x} end',
      '  return 7',
      'end',
      'if phase(ARGV[1]) == 7 then return {} end',
      'for i = 1, 2 do',
      "  if i == 2 then return {phase(i), 'a,b'} end",
      'end',
      'return {',
      '  1,',
      '  { 2, 3 },',
      '}',
    ].join('\n');
    expect(replyShapes(lua)).toEqual(['table of 0', 'table of 2']);
    expect(replyShapes('return redis.call("GET", KEYS[1])')).toEqual(['scalar']);
  });

  // and test/ (tools/ too, for comments): no history in comments, no sleep that waits for
  // something (a waitFor on it instead; a sleep that is the scenario says so), no retry loop
  // without a deadline that fails naming what it waited for (tools/structure-counts.ts defines
  // each count)
  it('keeps test/ to its habits: no history, no unmarked sleep, no loop without a deadline', () => {
    const c = structureCounts();
    expect(c.testHistoryComments).toEqual([]);
    expect(c.testSleepsUnmarked).toEqual([]);
    expect(c.testLoopsWithoutDeadline).toEqual([]);
  });

  it('keeps SQL in the repositories', () => {
    expect(structureCounts().sqlOutsideRepositories).toEqual([]);
  });

  it('lets orders/ reach storage only through its repositories and the BullMQ connection', () => {
    const allowed = (edge: string) => {
      const [from, to] = edge.split(' -> ') as [string, string];
      // a repository speaks SQL: it imports the database and its row types
      if (/(^|[/-])repository\.ts$/.test(from)) return to.startsWith('db/');
      // BullMQ builds its queue and worker connections from an ioredis one
      return ['orders/queue.ts', 'orders/worker.ts'].includes(from) && to === 'redis/connection.ts';
    };
    expect(structureCounts().ordersToStorage.filter((e) => !allowed(e))).toEqual([]);
  });

  // The Redis client and the key builder are for the storage floors (inventory/, lock/, the
  // composition root); held as ceilings so they can only leave the rest. (+1 each for the waiting
  // room's store, inventory/rooms/store.ts: a store of the inventory floor, the Redis door; +1 key
  // importer when the active set and the sale's leases on it became two files; +1 key importer for
  // the Idempotency-Key scripts' gateway; +1 each when the spill left
  // the sale's file, inventory/sale/spill.ts; +1 each for the room scripts' gateway,
  // inventory/rooms/protocol.ts, for the drop's store and script gateway, inventory/drop/protocol.ts,
  // and for the segment window's gateway; +1 client importer when the scripts at inventory/'s root
  // went to their rooms' gateways, sale/, outbox/, catalogue/ and idempotency/protocol.ts, four
  // files for three; +2 each for the draw's store and its scripts' gateway,
  // inventory/draw/store.ts and inventory/draw/protocol.ts; +1 each for the door's store,
  // access/door-store.ts: the fairness notes and the challenges' state.)
  it('lets no more storage plumbing into the middle floors than today', () => {
    const c = structureCounts();
    expect(c.redisClientImporters.length).toBeLessThanOrEqual(39);
    expect(c.keysImporters.length).toBeLessThanOrEqual(34);
  });
});
