/**
 * The figures the "why segments" sections quote (docs/benchmarks.md and README.md), so the docs
 * say what the latest runs measured: each generator run with --update-report (`npm run bench`,
 * `npm run bench:hotkey`, `npm run bench:k6`) stores its part in
 * load-tests/results/why-segments.json and rewrites the marked blocks from all the parts.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { ROOT } from './processes.js';

interface Measured {
  /** ISO date of the run */
  date: string;
  /** load average over the last minute when the run ended */
  load1: number;
}

export interface WhyFigures {
  bench?: Measured & {
    heldSegmented16VsHeldGlobal: number;
    heldSegmented16VsHeldGlobalAt1ms: number;
    segmented16VsGlobal: number;
    globalVsHeldGlobal: number;
    restocksSegmented16VsGlobal: number;
    restocksGlobalVsGlobal: number;
    restocksPerS: number;
    /** heldArithmetic (http-scenarios.ts) direct and at +1 ms */
    arithmetic?: Array<{
      delayMs: number;
      roundTripUs: number;
      serverCeiling: number;
      maxRatio: number;
    }>;
  };
  hotkey?: Measured & {
    busiestMasterShare: { global: number; segmented16: number };
    /** the same with the order queue's own cost taken off its master */
    busiestMasterShareWithoutQueue?: { global: number; segmented16: number };
    /** one product's ceiling (sales/s) by masters, from the HTTP run */
    ceilings: Array<{ masters: number; global: number; segmented16: number }>;
    /** Redis µs per deduct, the deduct alone at one pinned redis-server */
    deductUs: { one: number; sixteen: number };
  };
  k6?: Measured & { rate: number; ratios: Record<string, number> };
}

const FILE = join(ROOT, 'load-tests', 'results', 'why-segments.json');
const BEGIN =
  '<!-- why-segments:begin (generated: npm run bench, bench:hotkey, bench:k6 with --update-report) -->';
const END = '<!-- why-segments:end -->';

/** `text` with the marked block's content replaced; unchanged when it has no block. */
export function replaceBlock(text: string, content: string): string {
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  if (from < 0 || to < from) return text;
  return `${text.slice(0, from + BEGIN.length)}\n${content.trim()}\n${text.slice(to)}`;
}

const x = (v: number | undefined) => (v === undefined ? '?' : `${v}x`);
const when = (m: Measured | undefined, cmd: string) =>
  m ? `${cmd}, ${m.date}, load average ${m.load1}` : `not measured yet: ${cmd} -- --update-report`;
const perS = (v: number | undefined) =>
  v === undefined ? '?' : `${Math.round(v).toLocaleString('en-US').replace(/,/g, ' ')}/s`;

function ceilingAt(f: WhyFigures, masters: number) {
  return f.hotkey?.ceilings.find((c) => c.masters === masters);
}

/** The table of docs/benchmarks.md's section. */
export function docsBlock(f: WhyFigures): string {
  const b = f.bench;
  const h = f.hotkey;
  const k = f.k6;
  const rows = [
    ['view', 'figure', 'measured', 'run'],
    ['---', '---', '---:', '---'],
    [
      '1. held lock',
      '`heldSegmented16VsHeldGlobal` (target >= 3)',
      x(b?.heldSegmented16VsHeldGlobal),
      when(b, '`npm run bench`'),
    ],
    [
      '1. held lock',
      '`heldSegmented16VsHeldGlobalAt1ms` (target >= 10)',
      x(b?.heldSegmented16VsHeldGlobalAt1ms),
      when(b, '`npm run bench`'),
    ],
    [
      '1. held lock',
      "today's global / held global (`globalVsHeldGlobal`)",
      x(b?.globalVsHeldGlobal),
      when(b, '`npm run bench`'),
    ],
    ...(b?.arithmetic ?? []).map((a) => [
      '1. held lock',
      `${a.delayMs ? `at +${a.delayMs} ms` : 'on loopback'}: round trip (1 / (4 x global's rate)), N=16's ceiling on the server's one core, the most N=16 could sell over global`,
      `${a.roundTripUs} µs, ${perS(a.serverCeiling)}, ${a.maxRatio}x`,
      when(b, '`npm run bench`'),
    ]),
    [
      "2. today's path",
      '`segmented16VsGlobal` (one Redis)',
      x(b?.segmented16VsGlobal),
      when(b, '`npm run bench`'),
    ],
    [
      "2. today's path",
      `\`restocksSegmented16VsGlobal\` (restocks at ${b?.restocksPerS ?? '?'}/s)`,
      x(b?.restocksSegmented16VsGlobal),
      when(b, '`npm run bench`'),
    ],
    [
      "2. today's path",
      'global with restocks / without (`restocksGlobalVsGlobal`)',
      x(b?.restocksGlobalVsGlobal),
      when(b, '`npm run bench`'),
    ],
    [
      '3. hot key',
      '`hotKey.busiestMasterShare.global` (even 0.33)',
      String(h?.busiestMasterShare.global ?? '?'),
      when(h, '`npm run bench:hotkey`'),
    ],
    [
      '3. hot key',
      '`hotKey.busiestMasterShare.segmented16`',
      String(h?.busiestMasterShare.segmented16 ?? '?'),
      when(h, '`npm run bench:hotkey`'),
    ],
    [
      '3. hot key',
      "the same without the order queue's cost on its master: global / segmented N=16",
      `${h?.busiestMasterShareWithoutQueue?.global ?? '?'} / ${h?.busiestMasterShareWithoutQueue?.segmented16 ?? '?'}`,
      when(h, '`npm run bench:hotkey`'),
    ],
    ...[1, 3, 24].map((m) => [
      '3. hot key',
      `one product's ceiling, ${m} master${m === 1 ? '' : 's'}: global / segmented N=16`,
      `${perS(ceilingAt(f, m)?.global)} / ${perS(ceilingAt(f, m)?.segmented16)}`,
      when(h, '`npm run bench:hotkey`'),
    ]),
    [
      '3. hot key',
      'Redis µs per deduct at one pinned redis-server: 1 segment / 16',
      h ? `${h.deductUs.one} / ${h.deductUs.sixteen}` : '?',
      when(h, '`npm run bench:hotkey`'),
    ],
    ...Object.entries(k?.ratios ?? { heldSegmented16VsHeldGlobal: undefined }).map(([name, v]) => [
      'k6',
      `\`${name}\`${k ? ` (open arrivals at ${k.rate}/s)` : ''}`,
      x(v),
      when(k, '`npm run bench:k6`'),
    ]),
  ];
  return rows.map((r) => `| ${r.join(' | ')} |`).join('\n');
}

/** The README's few lines. */
export function readmeBlock(f: WhyFigures): string {
  const b = f.bench;
  const h = f.hotkey;
  return [
    `- **A lock held by the application** (acquire, read, write, release: the Redisson tutorials' shape):`,
    `  16 segment locks sell ${x(b?.heldSegmented16VsHeldGlobal)} what one global lock sells on loopback, ${x(b?.heldSegmented16VsHeldGlobalAt1ms)} with`,
    '  1 ms added each way to Redis: one lock serves one sale per four round trips.',
    `- **Today's sale** takes a free segment lock inside its one deduct script, so on one Redis global sells`,
    `  what 16 segments sell (${x(b?.segmented16VsGlobal)}). The lock bites again when something holds a segment the full`,
    `  way: with restocks holding locks at ${b?.restocksPerS ?? '?'}/s, 16 segments sold ${x(b?.restocksSegmented16VsGlobal)} what global sold.`,
    `- **A hot product across masters**: one segment puts ${h?.busiestMasterShare.global ?? '?'} of its Redis CPU on one master of 3, 16 put`,
    `  ${h?.busiestMasterShare.segmented16 ?? '?'} (even: 0.33; the order queue's master included); one product's ceiling grows from ${perS(ceilingAt(f, 3)?.segmented16)} on 3 masters to ${perS(ceilingAt(f, 24)?.segmented16)} on 24`,
    `  where a global product stays at ${perS(ceilingAt(f, 3)?.global)}.`,
    '',
    `(${[
      b && `\`npm run bench\` ${b.date}, load average ${b.load1}`,
      h && `\`bench:hotkey\` ${h.date}, load average ${h.load1}`,
    ]
      .filter(Boolean)
      .join('; ')}; everything on one 2-core machine.)`,
  ].join('\n');
}

/** Stores `part` with the parts before it and rewrites both documents' blocks (prettier-formatted). */
export async function updateWhySegments(part: WhyFigures): Promise<void> {
  const before = existsSync(FILE) ? (JSON.parse(readFileSync(FILE, 'utf8')) as WhyFigures) : {};
  const figures = { ...before, ...part };
  writeFileSync(FILE, `${JSON.stringify(figures, null, 2)}\n`);
  for (const [doc, block] of [
    ['docs/benchmarks.md', docsBlock(figures)],
    ['README.md', readmeBlock(figures)],
  ] as const) {
    const path = join(ROOT, doc);
    const text = readFileSync(path, 'utf8');
    if (!text.includes(BEGIN)) throw new Error(`${doc}: no why-segments block`);
    const options = { ...(await resolveConfig(path)), filepath: path };
    writeFileSync(path, await format(replaceBlock(text, block), options));
  }
}
