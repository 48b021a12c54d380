/**
 * `npm run bench:draw`: the draw's costs and its answer to a race, in ONE run on the same servers
 * (a scratch redis-server and PostgreSQL; the API, its admitter and the clients in this process,
 * a local beacon chain of 1 s rounds):
 *   - entries accepted per second over HTTP (`--http-entries` shoppers, 64 at a time);
 *   - for each of `--sizes` entries (written through the entry script, pipelined): the freeze
 *     (close, read, screen, sort, Merkle tree, one PostgreSQL transaction; again while one came
 *     after its round, each phase of the last printed) and the draw (round R fetched and
 *     verified, every rank, the ranks written, the line's first part) timed apart;
 *   - the standalone verifier (examples/verify-draw.mjs, Node alone, as a child process) on the
 *     largest draw's transcript, and on a transcript of `--verify` entries made in this process
 *     (draw-transcript.ts: the verifier's time at 10^6 without filling the store with 10^6);
 *   - a crowd of `--bots` bots holding `--identities` identities each among `--humans` shoppers:
 *     the units bots win in `--draws` draws of `--units` units against their fair share (their
 *     identities' share of the entries), and the same crowd in a first-come race over HTTP (the
 *     bots firing every identity at the opening, the shoppers arriving over 2 s).
 * A table, then exactly one JSON line. `--help` lists the options.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { LocalChain, newLocalChainKey } from '../../src/draw/local-chain.js';
import type { ProductView } from '../../src/inventory/index.js';
import { startApp, type BenchApp } from './draw-app.js';
import { madeTranscript } from './draw-transcript.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const OPTIONS = {
  sizes: ['10000,100000,1000000', 'entries of each draw timed (comma-separated)'],
  'http-entries': ['10000', 'shoppers entering over HTTP (entries per second)'],
  humans: ['2000', 'shoppers of the crowd, one identity each'],
  bots: ['20', 'bots of the crowd'],
  identities: ['10', 'identities each bot holds'],
  verify: ['1000000', 'entries of a transcript made in-process for the verifier (0: none)'],
  units: ['100', 'units of the crowd draw and race'],
  draws: ['10', 'draws of the crowd (the bots share averaged over them)'],
  'margin-ms': ['0', 'DRAW_BEACON_MARGIN_MS: a freeze slower than it is done again'],
  'update-report': [false, 'write load-tests/results/draw.md (the committed report)'],
  help: [false, 'print this and exit'],
} as const;

function options() {
  const { values: parsed } = parseArgs({
    options: Object.fromEntries(
      Object.entries(OPTIONS).map(([name, [def]]) =>
        typeof def === 'boolean'
          ? [name, { type: 'boolean' as const, default: def }]
          : [name, { type: 'string' as const, default: def }],
      ),
    ),
  });
  const values = parsed as Record<string, string | boolean | undefined>;
  if (values.help) {
    for (const [name, [def, what]] of Object.entries(OPTIONS)) {
      process.stdout.write(`  --${name.padEnd(16)} ${what} (default ${String(def)})\n`);
    }
    process.exit(0);
  }
  const num = (name: keyof typeof OPTIONS) => Number(values[name]);
  return {
    sizes: String(values.sizes).split(',').filter(Boolean).map(Number),
    httpEntries: num('http-entries'),
    humans: num('humans'),
    bots: num('bots'),
    identities: num('identities'),
    units: num('units'),
    verify: num('verify'),
    draws: num('draws'),
    marginMs: num('margin-ms'),
    update: values['update-report'] === true,
  };
}

const o = options();
const stack = await benchStack({});
const chain = new LocalChain(newLocalChainKey(1), 'bench');
const served = await chain.serve(0);
const config = loadConfig({
  ...NO_RATE_LIMITS,
  REDIS_URL: stack.redisUrl,
  DATABASE_URL: stack.databaseUrl,
  KEY_PREFIX: `bd${randomBytes(3).toString('hex')}`,
  AUTH_MODE: 'dev',
  ADMIN_TOKEN: 'bench-admin-token-0123456789',
  SALE_TOKEN_SECRET: 'bench-sale-token-secret-0123456789abcdef',
  LOG_LEVEL: 'silent',
  ROOM_MAX_PLACES: '5000000',
  PG_STATEMENT_TIMEOUT_MS: '60000',
  DRAW_CHAIN_INFO: JSON.stringify(chain.info),
  DRAW_BEACON_URLS: served.url,
  DRAW_BEACON_MARGIN_MS: String(o.marginMs),
});
const app: BenchApp = await startApp(config);
const rows: Array<Record<string, string | number>> = [];
const json: Record<string, unknown> = { machine: machine() };
const tmp = mkdtempSync(join(tmpdir(), 'seckill-bench-draw-'));
try {
  // entries per second over HTTP
  const rate = await app.httpEntries(o.httpEntries, 64);
  rows.push({
    measure: 'entries accepted over HTTP',
    value: `${Math.round(rate)}/s`,
    n: o.httpEntries,
  });
  json.entriesPerSecond = Math.round(rate);

  // freeze and draw, by size
  json.sizes = [];
  let largest: { productId: string; size: number } | undefined;
  for (const size of o.sizes) {
    const productId = `size${size}x${randomBytes(2).toString('hex')}`;
    const view = await app.seedDraw(productId, { total: Math.max(1, Math.round(size / 100)) });
    progress(`${size} entries: entering`);
    await app.enterDirect(productId, view, size);
    const t = await app.freezeAndDraw(view);
    const last = t.attempts[t.attempts.length - 1]!;
    const tries = t.attempts.length > 1 ? `, ${t.attempts.length} tries` : '';
    rows.push({ measure: `freeze, ${size} entries`, value: `${t.freezeMs} ms${tries}`, n: size });
    rows.push({
      measure: `  its read/screen/sort/merkle/write`,
      value: [last.read, last.screen, last.sort, last.merkle, last.write].join('/'),
      n: size,
    });
    rows.push({ measure: `draw, ${size} entries`, value: `${t.drawMs} ms`, n: size });
    progress(`${size} entries: freeze ${t.freezeMs} ms${tries}, draw ${t.drawMs} ms`);
    (json.sizes as unknown[]).push({
      entries: size,
      freezeMs: t.freezeMs,
      freezeTries: t.attempts.length,
      phases: last,
      drawMs: t.drawMs,
    });
    largest = { productId, size };
  }

  // the crowd (before the made transcript, whose making blocks this process a while)
  // the crowd: a draw's answer to a race
  const crowd = await app.crowd(o);
  const fair = (o.units * o.bots * o.identities) / (o.humans + o.bots * o.identities);
  rows.push({ measure: 'bots fair share (units)', value: fair.toFixed(1), n: o.units });
  rows.push({
    measure: `bots won in the draw (mean of ${o.draws})`,
    value: `${crowd.drawMean.toFixed(1)} (${ratio(crowd.drawMean, fair)}x fair)`,
    n: o.units,
  });
  rows.push({
    measure: 'bots bought in the race',
    value: `${crowd.race} (${ratio(crowd.race, fair)}x fair)`,
    n: o.units,
  });
  json.crowd = {
    humans: o.humans,
    bots: o.bots,
    identities: o.identities,
    units: o.units,
    fairShare: Math.round(fair * 100) / 100,
    drawMean: Math.round(crowd.drawMean * 100) / 100,
    drawRatio: ratio(crowd.drawMean, fair),
    drawRuns: crowd.draws,
    race: crowd.race,
    raceRatio: ratio(crowd.race, fair),
  };
  // the standalone verifier on the largest draw, then on a transcript made in-process
  const verifier = join(import.meta.dirname, '..', '..', 'examples', 'verify-draw.mjs');
  // a child process not waited for in a block: the API in this process keeps serving meanwhile
  const verify = async (transcript: unknown, name: string) => {
    const file = join(tmp, `${name}.json`);
    writeFileSync(file, JSON.stringify(transcript));
    const started = Date.now();
    await promisify(execFile)(process.execPath, [verifier, file, '--chain', chain.info.hash], {
      maxBuffer: 1 << 30,
    });
    return Date.now() - started;
  };
  json.verifier = [];
  const verified = (how: string, entries: number, ms: number) => {
    rows.push({ measure: `verifier (Node alone), ${how}`, value: `${ms} ms`, n: entries });
    (json.verifier as unknown[]).push({ entries, how, ms });
  };
  if (largest) {
    const ms = await verify(await app.transcript(largest.productId), 'largest');
    verified('the largest draw', largest.size, ms);
  }
  if (o.verify > 0) {
    progress(`${o.verify} entries: a transcript made for the verifier`);
    const made = madeTranscript(chain, o.verify, 100);
    verified('a made transcript', o.verify, await verify(made, 'made'));
  }
} finally {
  await app.close();
  served.server.close();
  await stack.stop();
  rmSync(tmp, { recursive: true, force: true });
}
const text = table(rows);
process.stdout.write(`${text}\n`);
if (o.update) saveRun('draw', text, true);
process.stdout.write(`${JSON.stringify(json)}\n`);
export type { ProductView };
