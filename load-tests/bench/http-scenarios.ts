/**
 * The scenarios of `npm run bench` (load-tests/bench/http.ts), their ratios and the targets the
 * ratios are read against. Pure: no process, no Redis, so the ratio arithmetic is tested cheaply
 * (test/bench/bench-ratios.test.ts).
 */

export interface Scenario {
  name: string;
  kind: 'raw' | 'bare' | 'ceiling' | 'sale' | 'held' | 'sold-out' | 'poll' | 'preflight';
  /** served by the API process with CORS_ORIGINS set, sent with a shop page's Origin */
  cors?: true;
  /** served by an API process with FAST_PATH=false (Express answers everything) */
  express?: true;
  strategy?: 'global' | 'segmented' | 'lockfree';
  segments?: number;
  /** served by the API process with admission limits on */
  limited?: true;
  /** an Idempotency-Key per purchase */
  keyed?: true;
  /** ms added each way between the serving process and Redis (a delay proxy of its own) */
  delayMs?: number;
  /** something holds the product's segment locks the full way while the sale runs */
  restocks?: true;
  /** in the round-trip grid of `--rtt` (rtt.md): 'only' there, 'also' in the default run too */
  rtt?: 'only' | 'also';
  /**
   * served by an API and worker pair with a webhook endpoint subscribed to every order event
   * (webhook-pair.ts): the events are delivered while the sale runs
   */
  webhook?: true;
}

/** Round trips to Redis delayed by this much each way in `--rtt` (0: loopback, no proxy). */
export const RTT_DELAYS_MS = [0, 0.5, 1, 2];

const at = (delayMs: number) => (delayMs ? `+${delayMs} ms` : '');

/** `global (held lock)`, `segmented N=16 (held lock, +1 ms)`, ... */
export function heldName(segments: number, delayMs = 0): string {
  const what = segments === 1 ? 'global' : `segmented N=${segments}`;
  return `${what} (held lock${delayMs ? `, ${at(delayMs)}` : ''})`;
}

/** Today's path: `global`, `segmented N=16 (+1 ms)`, ... */
export function pathName(base: string, delayMs = 0): string {
  return delayMs ? `${base} (${at(delayMs)})` : base;
}

const HELD_SEGMENTS = [1, 4, 16, 64];
const PATH_IN_RTT: Array<Pick<Scenario, 'name' | 'strategy' | 'segments'>> = [
  { name: 'global', strategy: 'global', segments: 1 },
  { name: 'segmented N=16', strategy: 'segmented', segments: 16 },
  { name: 'lockfree N=16', strategy: 'lockfree', segments: 16 },
];

function heldScenarios(): Scenario[] {
  return RTT_DELAYS_MS.flatMap((delayMs) =>
    HELD_SEGMENTS.map((segments): Scenario => {
      // in every run: loopback, and the 1 ms pair the At1ms ratio reads
      const everyRun = delayMs === 0 || (delayMs === 1 && (segments === 1 || segments === 16));
      return {
        name: heldName(segments, delayMs),
        kind: 'held',
        strategy: segments === 1 ? 'global' : 'segmented',
        segments,
        ...(delayMs && { delayMs }),
        rtt: everyRun ? 'also' : 'only',
      };
    }),
  );
}

function delayedPathScenarios(): Scenario[] {
  return RTT_DELAYS_MS.filter((d) => d > 0).flatMap((delayMs) =>
    PATH_IN_RTT.map((s): Scenario => ({
      ...s,
      name: pathName(s.name, delayMs),
      kind: 'sale',
      delayMs,
      rtt: 'only',
    })),
  );
}

const inRtt = (name: string) => PATH_IN_RTT.some((s) => s.name === name);

export const SCENARIOS: Scenario[] = [
  { name: 'raw node:http', kind: 'raw' },
  { name: 'bare Express', kind: 'bare' },
  { name: 'ceiling (no-op route)', kind: 'ceiling' },
  ...[
    { name: 'global', kind: 'sale', strategy: 'global', segments: 1 } as const,
    { name: 'segmented N=4', kind: 'sale', strategy: 'segmented', segments: 4 } as const,
    { name: 'segmented N=16', kind: 'sale', strategy: 'segmented', segments: 16 } as const,
    { name: 'segmented N=64', kind: 'sale', strategy: 'segmented', segments: 64 } as const,
    { name: 'lockfree N=16', kind: 'sale', strategy: 'lockfree', segments: 16 } as const,
  ].map((s): Scenario => (inRtt(s.name) ? { ...s, rtt: 'also' } : s)),
  { name: 'global + restocks', kind: 'sale', strategy: 'global', segments: 1, restocks: true },
  {
    name: 'segmented N=16 + restocks',
    kind: 'sale',
    strategy: 'segmented',
    segments: 16,
    restocks: true,
  },
  ...heldScenarios(),
  ...delayedPathScenarios(),
  {
    name: 'lockfree N=16 + limits',
    kind: 'sale',
    strategy: 'lockfree',
    segments: 16,
    limited: true,
  },
  { name: 'lockfree N=16 keyed', kind: 'sale', strategy: 'lockfree', segments: 16, keyed: true },
  {
    name: 'production',
    kind: 'sale',
    strategy: 'segmented',
    segments: 16,
    limited: true,
    keyed: true,
  },
  {
    name: 'production + webhook',
    kind: 'sale',
    strategy: 'segmented',
    segments: 16,
    limited: true,
    keyed: true,
    webhook: true,
  },
  { name: 'after sold out', kind: 'sold-out', strategy: 'lockfree', segments: 16 },
  // one shopper in a waiting room's lobby asks its place: answered from memory, ahead of Express
  { name: 'room poll', kind: 'poll', strategy: 'lockfree', segments: 16 },
  // a shop's page on its own origin: the same purchases, CORS-annotated, and the preflight
  { name: 'lockfree N=16 + CORS', kind: 'sale', strategy: 'lockfree', segments: 16, cors: true },
  {
    name: 'after sold out + CORS',
    kind: 'sold-out',
    strategy: 'lockfree',
    segments: 16,
    cors: true,
  },
  { name: 'CORS preflight', kind: 'preflight', cors: true },
  {
    name: 'after sold out (no fast path)',
    kind: 'sold-out',
    strategy: 'lockfree',
    segments: 16,
    express: true,
  },
];

/**
 * `--only`'s names: comma-separated, where a name may hold a comma inside its parentheses
 * ("global (held lock, +1 ms)").
 */
export function parseOnly(text: string): string[] {
  const names: string[] = [];
  let depth = 0;
  let name = '';
  for (const ch of text) {
    if (ch === ',' && depth === 0) {
      names.push(name.trim());
      name = '';
      continue;
    }
    if (ch === '(') depth++;
    if (ch === ')') depth = Math.max(0, depth - 1);
    name += ch;
  }
  names.push(name.trim());
  return names.filter(Boolean);
}

/** The scenarios of a run: the round-trip grid with `--rtt`, else everything else. */
export function defaultScenarios(rtt: boolean): Scenario[] {
  return SCENARIOS.filter((s) => (rtt ? s.rtt !== undefined : s.rtt !== 'only'));
}

export const TARGETS: Record<string, string> = {
  refusalVsCeiling: '>= 3',
  refusalVsRawHttp: '>= 0.6',
  ceilingVsBareExpress: '>= 0.9',
  lockfreeVsCeiling: '>= 0.85',
  soldOutVsCeiling: '>= 0.95',
  segmented16VsLockfree: '>= 0.75',
  segmented16VsGlobal: '~1 on one Redis',
  heldSegmented16VsHeldGlobal: '>= 3',
  heldSegmented16VsHeldGlobalAt1ms: '>= 10',
  limitsOnVsOff: '>= 0.85',
  keyedVsUnkeyed: '>= 0.85',
  productionVsLockfree: '>= 0.6',
  productionWebhookVsProduction: '>= 0.9',
  pollVsRawHttp: '>= 0.8',
  corsSaleVsPlain: '>= 0.95',
  corsRefusalVsPlain: '>= 0.95',
  preflightVsRawHttp: '>= 0.8',
};

export const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 100) / 100);

/** A ratio of two figures, or null when either scenario did not run (printed "not run"). */
const ratioIfRan = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? null : ratio(a, b);

/** What a run measured of each scenario that the ratios read. */
export interface Measured {
  /** sales a second (sale and held scenarios) */
  accepted: number;
  /** answers a second */
  answered: number;
}

/**
 * Every ratio of a run; one over a scenario that did not run (`--only`) is null, not 0: the
 * table says "not run" beside its target and the JSON line has null.
 */
export function ratiosOf(rows: ReadonlyMap<string, Measured>): Record<string, number | null> {
  const acc = (name: string) => rows.get(name)?.accepted;
  const rps = (name: string) => rows.get(name)?.answered;
  const ceiling = rps('ceiling (no-op route)');
  const refusals = rps('after sold out');
  const r = ratioIfRan;
  const out: Record<string, number | null> = {
    refusalVsCeiling: r(refusals, ceiling),
    refusalVsRawHttp: r(refusals, rps('raw node:http')),
    refusalFastVsExpress: r(refusals, rps('after sold out (no fast path)')),
    ceilingVsBareExpress: r(ceiling, rps('bare Express')),
    lockfreeVsCeiling: r(acc('lockfree N=16'), ceiling),
    soldOutVsCeiling: r(refusals, ceiling),
    segmented16VsLockfree: r(acc('segmented N=16'), acc('lockfree N=16')),
    segmented16VsGlobal: r(acc('segmented N=16'), acc('global')),
    segmented64VsGlobal: r(acc('segmented N=64'), acc('global')),
    lockfreeVsGlobal: r(acc('lockfree N=16'), acc('global')),
    heldSegmented4VsHeldGlobal: r(acc(heldName(4)), acc(heldName(1))),
    heldSegmented16VsHeldGlobal: r(acc(heldName(16)), acc(heldName(1))),
    heldSegmented64VsHeldGlobal: r(acc(heldName(64)), acc(heldName(1))),
    heldSegmented16VsHeldGlobalAt1ms: r(acc(heldName(16, 1)), acc(heldName(1, 1))),
    // what taking a free lock inside the deduct buys a single lock
    globalVsHeldGlobal: r(acc('global'), acc(heldName(1))),
    restocksSegmented16VsGlobal: r(acc('segmented N=16 + restocks'), acc('global + restocks')),
    restocksGlobalVsGlobal: r(acc('global + restocks'), acc('global')),
    restocksSegmented16VsSegmented16: r(acc('segmented N=16 + restocks'), acc('segmented N=16')),
    limitsOnVsOff: r(acc('lockfree N=16 + limits'), acc('lockfree N=16')),
    keyedVsUnkeyed: r(acc('lockfree N=16 keyed'), acc('lockfree N=16')),
    productionVsLockfree: r(acc('production'), acc('lockfree N=16')),
    productionWebhookVsProduction: r(acc('production + webhook'), acc('production')),
    pollVsRawHttp: r(rps('room poll'), rps('raw node:http')),
    corsSaleVsPlain: r(acc('lockfree N=16 + CORS'), acc('lockfree N=16')),
    corsRefusalVsPlain: r(rps('after sold out + CORS'), refusals),
    preflightVsRawHttp: r(rps('CORS preflight'), rps('raw node:http')),
  };
  // the round-trip grid's, where it ran
  for (const d of RTT_DELAYS_MS.filter((x) => x > 0)) {
    if (!rows.has(heldName(1, d)) && !rows.has(pathName('global', d))) continue;
    out[`heldSegmented16VsHeldGlobalAt${d}ms`] = r(acc(heldName(16, d)), acc(heldName(1, d)));
    out[`segmented16VsGlobalAt${d}ms`] = r(
      acc(pathName('segmented N=16', d)),
      acc(pathName('global', d)),
    );
    out[`lockfreeVsGlobalAt${d}ms`] = r(
      acc(pathName('lockfree N=16', d)),
      acc(pathName('global', d)),
    );
  }
  return out;
}

/** What a run's text shows in place of a figure whose scenario did not run. */
export const NOT_RUN = 'not run';

/** The ratios' table rows: each with its target, "not run" where it has no value. */
export function ratioRows(
  ratios: Record<string, number | null>,
): Array<{ ratio: string; value: number | string; target: string }> {
  return Object.entries(ratios).map(([name, value]) => ({
    ratio: name,
    value: value ?? NOT_RUN,
    target: TARGETS[name] ?? '',
  }));
}

/** What a held-lock row's figures say about its lock and its CPU (`heldArithmetic`). */
export interface HeldRow {
  accepted: number;
  /** the held-lock server's CPU µs per sale */
  serverUs: number;
  /** every measured tier's CPU µs per sale (server, Redis, load generator, ...) */
  allUs: number;
}

/**
 * Why the held-lock ratio is what it is, from the run's own rows: one lock sells one sale per
 * four round trips, so global's rate gives the round trip; 16 locks sell up to 16 times that
 * unless the held-lock server (one process: one core at most) or the machine runs out of CPU.
 */
export function heldArithmetic(global: HeldRow, sixteen: HeldRow, cores: number) {
  const roundTripUs = global.accepted ? Math.round(1e6 / (4 * global.accepted)) : 0;
  const serverCeiling = sixteen.serverUs ? Math.round(1e6 / sixteen.serverUs) : 0;
  const machineCeiling = sixteen.allUs ? Math.round((cores * 1e6) / sixteen.allUs) : 0;
  const coresBusy = Math.round(((sixteen.accepted * sixteen.allUs) / 1e6) * 100) / 100;
  const bound = (c: number) => (global.accepted ? ratio(c, global.accepted) : 0);
  return {
    roundTripUs,
    serverCeiling,
    machineCeiling,
    coresBusy,
    /** the most N=16 could sell over global: 16, or what the CPU allowed */
    maxRatio: Math.min(16, bound(serverCeiling), bound(machineCeiling)),
  };
}
