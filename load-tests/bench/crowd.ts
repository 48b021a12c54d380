/**
 * `npm run bench:crowd`: a flash crowd against the same sale without and with the waiting room,
 * and without and with a proof of work at the door (CHALLENGE=pow for the two challenge sides'
 * products: crowd-door.ts), in ONE run on the same servers (one API process, one worker, built
 * from dist/):
 *   - shoppers: `--shoppers` (1 000), each from an address of their own, arriving at random from
 *     1 s before the opening to 2 s after it; each keeps trying (honouring Retry-After, or the
 *     room's pollAfterSeconds) until they buy one unit or learn the item sold out;
 *   - bots: `--bots` (10), each opening `--connections` (10) connections from 1 s before the
 *     opening and buying back to back on every one; in the room they also join and poll from
 *     every connection without waiting, and try POST /seckill without a sale token.
 * Side by side: units bought by bots, Spearman's rank correlation between the arrival order of
 * the shoppers who arrived after the opening and their purchase order, requests reaching the API
 * per unit sold, API CPU per waiting shopper per minute, purchase p99, and whether the books
 * reconcile, and the bots' advantage A against a fair draw with its band (docs/fairness.md).
 * A table (a row per measure, a column per side), a picture of the line over time for
 * each side (crowd-picture.ts; an SVG beside the report), then exactly one JSON line.
 * `--help` lists the options (OPTIONS below).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { freePort } from '../../src/launcher/process.js';
import { admin, ADMIN_TOKEN, persistedAndReconciled } from './admin.js';
import { cpuSeconds } from './cpu.js';
import { crowd, p99, spearman, type CrowdHistory } from './crowd-clients.js';
import { advantage } from './crowd-door.js';
import { estimateRows, estimateTable } from './crowd-estimates.js';
import {
  clientLoop,
  pollHistogram,
  scaleFigures,
  startSampler,
  type ScaleFigures,
} from './crowd-scale.js';
import { lineOverTime, lineSvg, lineText, stepFor } from './crowd-picture.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';
import { machine, percentile, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const LEAD_MS = 3_000;
const SALE_LIMIT_MS = 60_000;

/** Every option, its default and what it does: parsed from here, and what --help prints. */
const OPTIONS = {
  shoppers: ['1000', 'shoppers, each from an address of their own'],
  bots: ['10', 'bots that buy back to back and skip the line where they can'],
  connections: ['10', 'connections each bot opens'],
  stock: ['100', 'units on sale'],
  'limit-per-user': ['4', 'units one shopper (or bot) may buy'],
  'admit-per-second': ['100', "the room's pace"],
  'max-active': ['200', 'shoppers admitted and not yet done, at most'],
  'admitted-for': ['10', 'seconds an admission lasts'],
  'arrive-over': [
    '3',
    'seconds over which shoppers arrive: a third of it before the opening, the rest after',
  ],
  only: ['', "run one side only: 'no room', room, challenge or 'room + challenge'"],
  'no-build': [false, 'use dist/ as it is (no npm run build first)'],
  'no-write': [false, 'write no report'],
  'update-report': [false, 'write load-tests/results/crowd.md (the committed report)'],
  help: [false, 'print this and exit'],
} as const;

function usage(): string {
  const lines = Object.entries(OPTIONS).map(([name, [def, what]]) => {
    const flag = typeof def === 'boolean' ? `--${name}` : `--${name} <${def || 'value'}>`;
    return `  ${flag.padEnd(28)} ${what}`;
  });
  return [
    'npm run bench:crowd [-- options]: a flash crowd against the same sale without and with the waiting room',
    '',
    ...lines,
    '',
    'Prints a table, a picture of the line over time for each side, and one JSON line; writes',
    'load-tests/results/raw/<run>/crowd.md and crowd-line-<side>.svg (docs/benchmarks.md).',
  ].join('\n');
}

/** The options given, or the usage (exit 0 for --help, 2 for a mistake). */
function options() {
  let parsed;
  try {
    parsed = parseArgs({
      options: Object.fromEntries(
        Object.entries(OPTIONS).map(([name, [def]]) =>
          typeof def === 'boolean'
            ? [name, { type: 'boolean' as const, default: def }]
            : [name, { type: 'string' as const, ...(def !== '' && { default: def }) }],
        ),
      ),
    });
  } catch (err) {
    process.stderr.write(
      `bench:crowd: ${err instanceof Error ? err.message : String(err)}\n\n${usage()}\n`,
    );
    process.exit(2);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    process.exit(0);
  }
  const bad = Object.entries(OPTIONS)
    .filter(([name, [def]]) => typeof def === 'string' && def !== '')
    .filter(([name]) => !(name === 'bots' ? /^\d+$/ : /^[1-9]\d*$/).test(String(values[name])))
    .map(
      ([name]) =>
        `--${name} must be a whole number${name === 'bots' ? '' : ' above 0'} (got ${String(values[name])})`,
    );
  if (values.only !== undefined && !(VARIANTS as readonly string[]).includes(String(values.only))) {
    bad.push(`--only is one of ${VARIANTS.join(', ')} (got ${String(values.only)})`);
  }
  if (bad.length) {
    process.stderr.write(`bench:crowd: ${bad.join('; ')}\n\n${usage()}\n`);
    process.exit(2);
  }
  return values as Record<string, string> & {
    only?: Variant;
    'no-build': boolean;
    'no-write': boolean;
    'update-report': boolean;
  };
}

/** The sides: without and with the room, without and with a proof of work at the door. */
const VARIANTS = ['no room', 'room', 'challenge', 'room + challenge'] as const;
type Variant = (typeof VARIANTS)[number];
const SLUG: Record<Variant, string> = {
  'no room': 'plain',
  room: 'room',
  challenge: 'door',
  'room + challenge': 'roomdoor',
};

interface Side {
  variant: Variant;
  history: CrowdHistory;
  opensAt: number;
  apiCpuS: number;
  sold: number;
  reconciled: boolean;
  /** the room side: what the line cost (crowd-scale.ts) */
  scale?: ScaleFigures;
}

async function main() {
  const values = options();
  const n = {
    shoppers: Number(values.shoppers),
    bots: Number(values.bots),
    connectionsPerBot: Number(values.connections),
    stock: Number(values.stock),
    limitPerUser: Number(values['limit-per-user']),
  };
  const arriveOverMs = Number(values['arrive-over']) * 1_000;
  const ARRIVE_BEFORE_MS = Math.round(arriveOverMs / 3);
  const ARRIVE_AFTER_MS = arriveOverMs - ARRIVE_BEFORE_MS;
  const waitingRoom = {
    admitPerSecond: Number(values['admit-per-second']),
    maxActive: Number(values['max-active']),
    admittedForSeconds: Number(values['admitted-for']),
  };
  if (!values['no-build']) {
    progress('building dist/ (npm run build)');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  }
  const stack = await benchStack({});
  const run = randomBytes(3).toString('hex');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `crowd${run}`,
    QUEUE_PREFIX: `{crowd${run}}`,
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN,
    TRUST_PROXY: 'true',
    SALE_TOKEN_SECRET: randomBytes(24).toString('hex'),
    LOG_LEVEL: 'error',
    PORT: String(port),
    API_PROCESSES: '1',
    CHALLENGE: 'pow',
    CHALLENGE_SECRET: randomBytes(24).toString('hex'),
    CHALLENGE_PRODUCTS: [SLUG.challenge, SLUG['room + challenge']]
      .map((slug) => `crowd-${slug}-${run}`)
      .join(','),
  };
  const procs: ChildProcess[] = [];
  const sides: Side[] = [];
  try {
    const api = child(cli('serve'), env, 'API');
    procs.push(api, child(cli('worker'), env, 'worker'));
    const base = `http://127.0.0.1:${port}`;
    await until('the API', async () => (await fetch(`${base}/readyz`)).ok, 60_000);
    const variants = VARIANTS.filter((v) => !values.only || v === values.only);
    for (const variant of variants) {
      const productId = `crowd-${SLUG[variant]}-${run}`;
      const room = variant.startsWith('room');
      const challenge = variant.endsWith('challenge');
      const opensAt = Date.now() + Math.max(LEAD_MS, ARRIVE_BEFORE_MS + 2_000);
      const seeded = await admin(base, 'PUT', `/admin/products/${productId}`, {
        total: n.stock,
        strategy: 'lockfree',
        limitPerUser: n.limitPerUser,
        startsAt: new Date(opensAt).toISOString(),
        ...(room && { waitingRoom }),
        ...(challenge && !room && { requireSaleToken: true }),
      });
      if (!seeded.ok) throw new Error(`seeding: ${seeded.status} ${await seeded.text()}`);
      progress(
        `${variant}: ${n.shoppers} shoppers and ${n.bots} bots x ${n.connectionsPerBot} connections`,
      );
      const before = cpuSeconds({ API: api.pid }).API ?? 0;
      const line = { waiting: 0, joined: 0 };
      const histogramBefore = await pollHistogram(base);
      const loopDelay = clientLoop();
      const sampler = room
        ? startSampler({ apiPid: api.pid!, redisUrl: stack.redisUrl, line: () => ({ ...line }) })
        : undefined;
      // a long line takes as long as its admissions: three times that, at the least a minute
      const admitMs = Math.ceil((3 * n.shoppers) / waitingRoom.admitPerSecond) * 1_000;
      const history = await crowd({
        base,
        productId,
        opensAt,
        ...n,
        arriveBeforeMs: ARRIVE_BEFORE_MS,
        arriveAfterMs: ARRIVE_AFTER_MS,
        stopAt: opensAt + Math.max(SALE_LIMIT_MS, ARRIVE_AFTER_MS + admitMs),
        room,
        challenge,
        onLine: (waiting, joined) => Object.assign(line, { waiting, joined }),
      });
      const samples = await sampler?.stop();
      const clientLoopP99Ms = loopDelay();
      const histogramAfter = await pollHistogram(base);
      const apiCpuS = (cpuSeconds({ API: api.pid }).API ?? 0) - before;
      const r = await persistedAndReconciled(base, productId);
      sides.push({
        variant,
        history,
        opensAt,
        apiCpuS,
        sold: r.total - r.remaining,
        reconciled: r.ok && r.persisted + r.remaining === n.stock,
        ...(samples && {
          scale: scaleFigures(samples, history.pollMs, {
            before: histogramBefore,
            after: histogramAfter,
            clientLoopP99Ms,
          }),
        }),
      });
    }
  } finally {
    await stopAll(procs);
    await stack.stop();
  }
  const rows = sides.map((s) => figuresOf(s, n));
  const off = rows.find((r) => r.variant === 'no room');
  const on = rows.find((r) => r.variant === 'room');
  const roomSide = sides.find((s) => s.variant === 'room');
  const estimates = roomSide && estimateRows(roomSide.history.waits);
  const fair = (variant: Variant) => {
    const r = rows.find((row) => row.variant === variant);
    return r ? { advantage: r.advantage, band: r.advantageBand } : null;
  };
  const figures = {
    bench: 'crowd',
    machine: machine(),
    ...n,
    waitingRoom,
    results: rows,
    ...(estimates && { estimates }),
    ...(roomSide?.scale && { scale: roomSide.scale }),
    ratios: on &&
      off && {
        botUnitsRoomVsNone: ratio(on.botUnits, off.botUnits),
        requestsPerUnitRoomVsNone: ratio(on.requestsPerUnit, off.requestsPerUnit),
        cpuPerWaitingShopperRoomVsNone: ratio(
          on.apiCpuMsPerWaitingShopperMinute,
          off.apiCpuMsPerWaitingShopperMinute,
        ),
      },
    fairness: {
      none: fair('no room'),
      room: fair('room'),
      challenge: fair('challenge'),
      roomAndChallenge: fair('room + challenge'),
    },
  };
  const pictures = sides.map((s) => {
    const stepMs = stepFor(s.history);
    return { variant: s.variant, stepMs, samples: lineOverTime(s.history, s.opensAt, stepMs) };
  });
  const text = [
    `Flash crowd: ${n.stock} units (${n.limitPerUser} per shopper), ${n.shoppers} shoppers ` +
      `(arriving from ${ARRIVE_BEFORE_MS / 1000} s before to ${ARRIVE_AFTER_MS / 1000} s after the opening), ` +
      `${n.bots} bots x ${n.connectionsPerBot} connections; room: ${JSON.stringify(waitingRoom)}; ` +
      `1 API process, ${machine().cpus} cores`,
    '',
    readableTable(rows),
    '',
    ...(estimates
      ? [
          "the room's estimate: each shopper's wait (join to the answer that ended it) against the worst case (p90) shown:",
          estimateTable(estimates),
          '',
        ]
      : []),
    ...(roomSide?.scale
      ? [
          "what the room's line cost (a sample a second; per place: memory grown / shoppers joined, at the line's peak):",
          table([{ ...roomSide.scale }]),
          '',
        ]
      : []),
    ...pictures.flatMap((p) => [
      `the line over time, ${p.variant} (from the clients' history, every ${p.stepMs / 1000} s; ` +
        `${p.variant.startsWith('room') ? 'in line: joined, not yet admitted' : 'in line: arrived, still trying'}; admitted and sold so far):`,
      lineText(p.samples),
      '',
    ]),
    ...sides.map((s) => `${s.variant}: answers ${JSON.stringify(s.history.statuses)}`),
    '',
    JSON.stringify(figures),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (!values['no-write']) {
    const file = saveRun('crowd', text, values['update-report']);
    for (const p of pictures) {
      const svg = join(dirname(file), `crowd-line-${p.variant.replace(' ', '-')}.svg`);
      writeFileSync(
        svg,
        lineSvg(
          p.samples,
          `the line over time, ${p.variant}: ${n.shoppers} shoppers, ${n.stock} units`,
        ),
      );
      progress(`picture: ${svg}`);
    }
  }
  if (sides.some((s) => !s.reconciled || s.sold > n.stock)) process.exitCode = 1;
}

/** What each measure is called in the table (the JSON line keeps the keys). */
const MEASURES: Record<string, string> = {
  sold: 'units sold',
  botUnits: 'units bought by bots',
  shopperUnits: 'units bought by shoppers',
  arrivalVsPurchaseRho: 'arrival vs purchase order (Spearman rho, late arrivals)',
  lateBuyers: 'shoppers who arrived after the opening and bought',
  requests: 'requests sent',
  requestsPerUnit: 'requests per unit sold',
  purchaseRequestsPerUnit: 'purchase requests per unit sold',
  apiCpuS: 'API CPU (s)',
  apiCpuMsPerWaitingShopperMinute: 'API CPU per waiting shopper per minute (ms)',
  purchaseP99Ms: 'purchase p99 (ms)',
  doorP50Ms: 'door: challenge asked to answer in hand, p50 (ms)',
  doorP90Ms: 'door: challenge asked to answer in hand, p90 (ms)',
  solveCpuS: "clients' proofs of work, CPU on this machine (s)",
  reconciled: 'reconciliation',
  fairShare: "bots' fair share of the units (mu = U * F / E)",
  advantage: "bots' advantage A = u_F / mu",
  advantageBand: "A's 95 % band under a fair draw",
};

/** A row per measure, a column per side. */
function readableTable(rows: Array<ReturnType<typeof figuresOf>>): string {
  return table(
    Object.entries(MEASURES).map(([key, name]) => ({
      measure: name,
      ...Object.fromEntries(
        rows.map((r) => {
          const v = r[key as keyof typeof r];
          return [r.variant, v === null || typeof v === 'object' ? JSON.stringify(v) : v];
        }),
      ),
    })),
  );
}

function figuresOf(s: Side, n: { shoppers: number; bots: number }) {
  const h = s.history;
  const waitingMinutes = h.waitingShopperMs / 60_000;
  return {
    variant: s.variant,
    sold: s.sold,
    botUnits: h.botUnits,
    shopperUnits: h.shopperUnits,
    arrivalVsPurchaseRho:
      Math.round(spearman(h.lateBuyers.map((b) => ({ a: b.arrivedAt, b: b.boughtAt }))) * 100) /
      100,
    lateBuyers: h.lateBuyers.length,
    requests: h.requests,
    requestsPerUnit: ratio(h.requests, s.sold),
    purchaseRequestsPerUnit: ratio(h.purchaseRequests, s.sold),
    apiCpuS: Math.round(s.apiCpuS * 100) / 100,
    apiCpuMsPerWaitingShopperMinute: ratio(s.apiCpuS * 1_000, waitingMinutes),
    purchaseP99Ms: Math.round(p99(h.purchaseMs)),
    ...doorFigures(h),
    reconciled: s.reconciled ? 'clean' : 'NO',
    ...(({ advantage: a, band, fairShare }) => ({ fairShare, advantage: a, advantageBand: band }))(
      advantage(n.shoppers + n.bots, n.bots, h.botUnits + h.shopperUnits, h.botUnits),
    ),
  };
}

/** The door's figures of a challenge side; null on the others. */
function doorFigures(h: CrowdHistory) {
  if (h.doorMs.length === 0) return { doorP50Ms: null, doorP90Ms: null, solveCpuS: null };
  const sorted = [...h.doorMs].sort((a, b) => a - b);
  return {
    doorP50Ms: Math.round(percentile(sorted, 50)),
    doorP90Ms: Math.round(percentile(sorted, 90)),
    solveCpuS: Math.round(h.solveCpuS * 10) / 10,
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:crowd failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
