/**
 * The line over time in `npm run bench:crowd`, from the clients' own history: at each step, the
 * shoppers in line (arrived, not yet admitted, not gone; without a room: arrived, still trying),
 * and how many were admitted and how many units were sold so far. Drawn twice: as text for the
 * terminal and the report, and as an SVG beside the report (as `npm run chaos` draws its
 * timeline). Pure functions of the history.
 */
import type { CrowdHistory } from './crowd-clients.js';

export interface LineSample {
  /** ms from the opening */
  atMs: number;
  inLine: number;
  admitted: number;
  sold: number;
}

/** A step of whole half-seconds that draws the run in at most `rows` samples. */
export function stepFor(h: CrowdHistory, rows = 30): number {
  if (h.people.length === 0) return 500;
  const first = Math.min(...h.people.map((p) => p.arrivedAt));
  const last = Math.max(...h.people.map((p) => p.leftAt), ...h.botBuys);
  return Math.max(500, Math.ceil((last - first) / rows / 500) * 500);
}

/** Samples every `stepMs` from the first arrival to the last event. */
export function lineOverTime(h: CrowdHistory, opensAt: number, stepMs: number): LineSample[] {
  const people = h.people;
  if (people.length === 0) return [];
  const first = Math.min(...people.map((p) => p.arrivedAt));
  const last = Math.max(
    ...people.map((p) => p.leftAt),
    ...h.botBuys,
    ...people.map((p) => p.boughtAt ?? 0),
  );
  const samples: LineSample[] = [];
  for (let t = first; t <= last + stepMs; t += stepMs) {
    let inLine = 0;
    let admitted = 0;
    let sold = 0;
    for (const p of people) {
      if (p.admittedAt !== undefined && p.admittedAt <= t) admitted++;
      if (p.boughtAt !== undefined && p.boughtAt <= t) sold++;
      const waiting = p.admittedAt ?? p.boughtAt ?? p.leftAt;
      if (p.arrivedAt <= t && t < waiting) inLine++;
    }
    for (const b of h.botBuys) if (b <= t) sold++;
    samples.push({ atMs: Math.round(t - opensAt), inLine, admitted, sold });
  }
  return samples;
}

/** The samples as text: one row per step, the line as a bar. */
export function lineText(samples: LineSample[], width = 40): string {
  const peak = Math.max(1, ...samples.map((s) => s.inLine));
  const rows = samples.map((s) => {
    const bar = '#'.repeat(Math.round((s.inLine / peak) * width));
    return `${(s.atMs / 1000).toFixed(1).padStart(6)}  ${bar.padEnd(width)} ${String(s.inLine).padStart(6)}  ${String(s.admitted).padStart(8)}  ${String(s.sold).padStart(6)}`;
  });
  const head = `${'t (s)'.padStart(6)}  ${'in line'.padEnd(width)} ${''.padStart(6)}  ${'admitted'.padStart(8)}  ${'sold'.padStart(6)}`;
  return [head, ...rows].join('\n');
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

const SERIES = [
  { key: 'inLine', name: 'in line', color: '#1565c0' },
  { key: 'admitted', name: 'admitted so far', color: '#2e7d32' },
  { key: 'sold', name: 'sold so far', color: '#c62828' },
] as const;

/** The samples as an SVG: three lines over time, the opening marked. */
export function lineSvg(samples: LineSample[], title: string): string {
  const W = 960;
  const H = 320;
  const left = 50;
  const top = 30;
  const plotW = W - left - 20;
  const plotH = 220;
  if (samples.length < 2)
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="40"/>`;
  const from = samples[0]!.atMs;
  const to = samples[samples.length - 1]!.atMs;
  const peak = Math.max(1, ...samples.flatMap((s) => [s.inLine, s.admitted, s.sold]));
  const x = (ms: number) => left + ((ms - from) / Math.max(1, to - from)) * plotW;
  const y = (v: number) => top + plotH - (v / peak) * plotH;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${left}" y="18" font-size="13">${esc(title)}</text>`,
    `<line x1="${x(0).toFixed(1)}" y1="${top}" x2="${x(0).toFixed(1)}" y2="${top + plotH}" stroke="#999" stroke-dasharray="4 3"/>`,
    `<text x="${(x(0) + 3).toFixed(1)}" y="${top + 10}">opening</text>`,
  ];
  for (const s of SERIES) {
    const pts = samples.map((p) => `${x(p.atMs).toFixed(1)},${y(p[s.key]).toFixed(1)}`);
    out.push(
      `<polyline points="${pts.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`,
    );
  }
  out.push(
    `<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="black"/>`,
    `<text x="4" y="${top + 8}">${peak}</text>`,
    `<text x="4" y="${top + plotH}">0</text>`,
  );
  const stepS = Math.max(1, Math.ceil((to - from) / 1000 / 12));
  for (let s = Math.ceil(from / 1000); s <= to / 1000; s += stepS) {
    out.push(
      `<text x="${x(s * 1000).toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle">${s} s</text>`,
    );
  }
  SERIES.forEach((s, i) =>
    out.push(
      `<rect x="${left + i * 160}" y="${H - 18}" width="10" height="10" fill="${s.color}"/>`,
      `<text x="${left + i * 160 + 14}" y="${H - 9}">${s.name}</text>`,
    ),
  );
  out.push('</svg>');
  return out.join('\n');
}
