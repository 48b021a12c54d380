/**
 * The chaos report: a timeline SVG (answers per second by kind, stacked, with each fault's
 * window shaded and named, as Jepsen draws its rate plots) and a markdown page around it.
 * Pure functions of the history, the faults and the checker's results.
 */
import type { HistoryEntry, InvariantResult, PurchaseOp } from './history.js';
import type { Fault } from './nemesis.js';
import { availabilityLines, type FaultLiveness, type KindAvailability } from './windows.js';

export interface AppliedFault extends Fault {
  applied: boolean;
  healedAt?: number;
  /** the slots of the Redis server it struck (none for a process fault) */
  sickSlots?: Array<[number, number]>;
  /** lag-kill-master: ms since the sale's start when the lag began and the master was killed */
  lagged?: { from: number; killed: number };
  /** ms from heal to the first accepted purchase invoked after it */
  recoveryMs?: number;
}

const KINDS = [
  { name: 'ok (202)', color: '#2e7d32', test: (p: PurchaseOp) => p.outcome === 'ok' },
  {
    name: 'sold out / limit (409, 410)',
    color: '#90a4ae',
    test: (p: PurchaseOp) => p.outcome === 'fail' && (p.status === 409 || p.status === 410),
  },
  {
    name: 'other refusal (4xx, paused)',
    color: '#f9a825',
    test: (p: PurchaseOp) => p.outcome === 'fail' && p.status !== 409 && p.status !== 410,
  },
  {
    name: 'unknown (5xx, timeout)',
    color: '#c62828',
    test: (p: PurchaseOp) => p.outcome === 'unknown',
  },
];

const FAULT_COLORS: Record<string, string> = {
  'kill-master': '#e57373',
  'pause-master': '#ba68c8',
  'freeze-redis': '#ba68c8',
  'cut-redis': '#ffb74d',
  'delay-redis': '#fff176',
  'kill-api': '#64b5f6',
  'kill-worker': '#4db6ac',
  'pause-postgres': '#a1887f',
  'lag-kill-master': '#d32f2f',
};

/** The invariant's note: its counter-example, or what it counted while it held. */
export function resultNote(r: InvariantResult): string {
  if (r.counterExample) return r.counterExample;
  if (r.lost) {
    const named = `${r.lost} acknowledged sales lost: ${r.named ?? r.lost} named by reconciliation`;
    if (!r.traceless) return named;
    return `${named}, ${r.traceless} lost without a trace (default mode's window, only durable mode closes it: sale and job both on the killed master)`;
  }
  if (r.placesLost || r.rewound) {
    const why = `with a master killed after a replication lag (default mode's window, only durable mode closes it)`;
    return `${r.placesLost ?? 0} places lost, ${r.rewound ?? 0} moved back by lost admissions, ${why}`;
  }
  if (r.paused)
    return `paused ${(r.paused.ms / 1000).toFixed(1)} s: ${r.paused.purchases} purchases sent, ${r.paused.refused} refused sale-paused, none sold before the resume; ${r.paused.roomAnswers} room answers 'paused'`;
  if (r.late)
    return `${r.late.count} returns late, none lost (longest ${(r.late.longestMs / 1000).toFixed(1)} s: order ${r.late.orderId})`;
  return '';
}

/** answers per second by kind, over the sale (purchases by completion time) */
export function perSecond(history: HistoryEntry[], seconds: number): number[][] {
  const rows = Array.from({ length: seconds }, () => KINDS.map(() => 0));
  for (const h of history) {
    if (h.type !== 'purchase') continue;
    const s = Math.floor(h.completeMs / 1000);
    if (s < 0 || s >= seconds) continue;
    const k = KINDS.findIndex((kind) => kind.test(h));
    rows[s]![k]!++;
  }
  return rows;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function timelineSvg(
  history: HistoryEntry[],
  faults: AppliedFault[],
  seconds: number,
  title: string,
  /** an operator's pauses of the room product (ms of the run), drawn as a lane of their own */
  pauses: Array<{ from: number; to: number }> = [],
): string {
  const W = 960;
  const H = 360;
  const left = 50;
  const top = 30;
  const plotW = W - left - 20;
  const plotH = 220;
  const rows = perSecond(history, seconds);
  const peak = Math.max(1, ...rows.map((r) => r.reduce((a, b) => a + b, 0)));
  const x = (s: number) => left + (s / seconds) * plotW;
  const y = (v: number) => top + plotH - (v / peak) * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${left}" y="18" font-size="13">${esc(title)}</text>`,
  ];
  // fault windows, one lane each so overlapping faults stay readable
  faults.forEach((f, i) => {
    if (!f.applied) return;
    const from = x(f.at / 1000);
    const to = x(((f.healedAt ?? f.at + f.lasts) as number) / 1000);
    out.push(
      `<rect x="${from.toFixed(1)}" y="${top}" width="${Math.max(1, to - from).toFixed(1)}" height="${plotH}" fill="${FAULT_COLORS[f.kind] ?? '#ddd'}" fill-opacity="0.22"/>`,
      `<rect x="${from.toFixed(1)}" y="${top + plotH + 6 + (i % 4) * 12}" width="${Math.max(1, to - from).toFixed(1)}" height="9" fill="${FAULT_COLORS[f.kind] ?? '#ddd'}"/>`,
      `<text x="${(from + 2).toFixed(1)}" y="${top + plotH + 14 + (i % 4) * 12}" font-size="8">${f.kind}</text>`,
    );
  });
  for (const p of pauses) {
    const from = x(p.from / 1000);
    const to = x(Math.min(p.to, seconds * 1000) / 1000);
    out.push(
      `<rect x="${from.toFixed(1)}" y="${top}" width="${Math.max(1, to - from).toFixed(1)}" height="${plotH}" fill="none" stroke="#37474f" stroke-dasharray="4 3"/>`,
      `<text x="${(from + 2).toFixed(1)}" y="${top + 10}" font-size="9">room paused</text>`,
    );
  }
  // stacked areas, one per answer kind
  const base = rows.map(() => 0);
  KINDS.forEach((kind, k) => {
    const upper = rows.map((r, s) => base[s]! + r[k]!);
    const pts = [
      ...upper.map((v, s) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`),
      ...base.map((v, s) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).reverse(),
    ];
    out.push(`<polygon points="${pts.join(' ')}" fill="${kind.color}" fill-opacity="0.85"/>`);
    upper.forEach((v, s) => (base[s] = v));
  });
  // axes
  out.push(
    `<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="black"/>`,
    `<text x="4" y="${top + 8}">${peak}/s</text>`,
    `<text x="4" y="${top + plotH}">0</text>`,
  );
  for (let s = 0; s <= seconds; s += Math.max(10, Math.ceil(seconds / 12 / 10) * 10))
    out.push(
      `<text x="${x(s).toFixed(1)}" y="${top + plotH + 66}" text-anchor="middle">${s} s</text>`,
    );
  KINDS.forEach((kind, k) =>
    out.push(
      `<rect x="${left + k * 190}" y="${H - 18}" width="10" height="10" fill="${kind.color}"/>`,
      `<text x="${left + k * 190 + 14}" y="${H - 9}">${esc(kind.name)}</text>`,
    ),
  );
  out.push('</svg>');
  return out.join('\n');
}

export function markdownReport(o: {
  title: string;
  command: string;
  results: InvariantResult[];
  faults: AppliedFault[];
  figures: Record<string, unknown>;
  liveness: FaultLiveness[];
  availability: Partial<Record<string, KindAvailability>>;
}): string {
  const lines = [
    `# ${o.title}`,
    '',
    `\`${o.command}\``,
    '',
    '![timeline: answers per second by kind, fault windows shaded](timeline.svg)',
    '',
    '## Invariants',
    '',
    '| invariant | result | first counter-example |',
    '|---|---|---|',
    ...o.results.map(
      (r) =>
        `| ${r.name} | ${r.ok ? 'ok' : '**BROKEN**'} | ${resultNote(r).replace(/\|/g, '\\|')} |`,
    ),
    '',
    '## Faults',
    '',
    'Answers of the purchases **started** while the fault was the only one under way; those',
    'started while it overlapped another are counted apart ("shared"), credited to neither.',
    '',
    '| # | fault | at s | lasts ms | overlaps | started alone /s | their answers | shared | recovery ms (heal to first 202) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...o.faults.map((f, i) => {
      const l = o.liveness[i]!;
      return `| ${i + 1} | ${f.kind}${f.applied ? '' : ' (skipped: no target)'} | ${(f.at / 1000).toFixed(1)} | ${f.lasts} | ${l.overlaps.map((n) => `#${n}`).join(' ') || '-'} | ${l.perSecond.toFixed(0)} | ${l.kinds} | ${l.shared} | ${f.recoveryMs ?? '-'} |`;
    }),
    '',
    '## Availability while one fault alone lasts',
    '',
    'The share of purchases answered definitively (202, 409, 410) among those started while a',
    "fault of that kind alone was under way, by the shopper's home shard (the shard of their home",
    'segment: the struck one, or another).',
    '',
    ...availabilityLines(o.availability),
    '',
    '## Figures',
    '',
    '```json',
    JSON.stringify(o.figures, null, 2),
    '```',
    '',
  ];
  return lines.join('\n');
}
