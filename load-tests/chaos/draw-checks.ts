/**
 * The chaos run's checks of the draw product (docs/draw.md), from the clients' history and the
 * public transcript alone, like checker.ts. No I/O here, so tests feed it made-up histories.
 *   - draw-frozen-before-beacon: the freeze (its time, as the transcript says) came before the
 *     beacon round's time (the chain's genesis + (round - 1) * period), and no entry was accepted
 *     (a 201: a new entry) for a request sent after the freeze;
 *   - draw-cascade-in-rank: every purchase right went to the lowest rank not yet served when it was
 *     passed on: once a shopper of rank r was answered `won`, no shopper of a rank below r is
 *     answered `waitlisted` in a request sent after it; no rank past the transcript's `offered`
 *     was ever answered `won`; and every entry that bought was offered a right.
 *   A master of the draw's slot lagged then killed (default mode) may take back admissions of its
 *   lag: a rank answered `waitlisted` after such a kill is counted (`rewound`), not broken.
 */
import type { DrawInvariantName, DrawOp, HistoryEntry, InvariantResult } from './history.js';

export interface DrawTranscript {
  state: string;
  frozenAt: string | null;
  round: number | null;
  chain: { genesis_time: number; period: number };
  winners: string[];
  waitlist: string[];
  offered: number;
  bought: string[];
}

export type DrawInvariantResult = InvariantResult & { name: DrawInvariantName };

const drawOps = (history: HistoryEntry[], product: string) =>
  history.filter((h): h is DrawOp => h.type === 'draw' && h.product === product);

function frozenBeforeBeacon(
  history: HistoryEntry[],
  product: string,
  t: DrawTranscript,
  t0: number,
): DrawInvariantResult {
  const name = 'draw-frozen-before-beacon';
  if (t.state !== 'drawn' || !t.frozenAt || !t.round) {
    return { name, ok: false, counterExample: `the draw ended the run ${t.state}, not drawn` };
  }
  const frozenAt = Date.parse(t.frozenAt);
  const roundAt = (t.chain.genesis_time + (t.round - 1) * t.chain.period) * 1_000;
  if (!(frozenAt < roundAt)) {
    return {
      name,
      ok: false,
      counterExample: `frozen at ${t.frozenAt}, round ${t.round} due at ${new Date(roundAt).toISOString()}`,
    };
  }
  const late = drawOps(history, product).find(
    (o) => o.kind === 'enter' && o.status === 201 && t0 + o.invokeMs > frozenAt,
  );
  if (late) {
    return {
      name,
      ok: false,
      counterExample: `op ${late.op}: ${late.user}'s entry sent ${t0 + late.invokeMs - frozenAt} ms after the freeze was accepted (${late.entryId})`,
    };
  }
  return { name, ok: true };
}

function cascadeInRank(
  history: HistoryEntry[],
  product: string,
  t: DrawTranscript,
  rewindsAfter: number[],
): DrawInvariantResult {
  const name = 'draw-cascade-in-rank';
  const rankOf = new Map([...t.winners, ...t.waitlist].map((id, i) => [id, i + 1]));
  const ops = drawOps(history, product).filter((o) => o.kind === 'read' && o.entryId);
  const rank = (o: DrawOp) => o.rank ?? rankOf.get(o.entryId!) ?? 0;
  const beyond = ops.find(
    (o) => o.state === 'won' && rank(o) > Math.max(t.offered, t.winners.length),
  );
  if (beyond) {
    return {
      name,
      ok: false,
      counterExample: `op ${beyond.op}: rank ${rank(beyond)} won, only ${t.offered} ranks were offered`,
    };
  }
  // the first answer `won` of each rank, in the order they came
  const won = new Map<number, DrawOp>();
  for (const o of [...ops].sort((a, b) => a.completeMs - b.completeMs)) {
    if (o.state === 'won' && !won.has(rank(o))) won.set(rank(o), o);
  }
  let rewound = 0;
  for (const o of ops) {
    if (o.state !== 'waitlisted') continue;
    const passed = [...won].find(([r, w]) => r > rank(o) && w.completeMs < o.invokeMs);
    if (!passed) continue;
    if (rewindsAfter.some((killed) => passed[1].completeMs < killed && killed <= o.completeMs)) {
      rewound++;
      continue;
    }
    return {
      name,
      ok: false,
      counterExample: `op ${o.op}: rank ${rank(o)} (${o.user}) still waitlisted after rank ${passed[0]} won (op ${passed[1].op})`,
      rewound,
    };
  }
  const offered = new Set(
    [...t.winners, ...t.waitlist].slice(0, Math.max(t.offered, t.winners.length)),
  );
  const stray = t.bought.find((id) => !offered.has(id));
  if (stray) return { name, ok: false, counterExample: `${stray} bought without a right`, rewound };
  return { name, ok: true, ...(rewound > 0 && { rewound }) };
}

/**
 * Both checks. `t0`: the run's start (ms since the epoch; the history's times are from it);
 * `rewindsAfter`: when a master of the draw's slot was killed after a lag (default mode).
 */
export function checkDraw(
  history: HistoryEntry[],
  o: { product: string; transcript: DrawTranscript; t0: number; rewindsAfter?: number[] },
): DrawInvariantResult[] {
  return [
    frozenBeforeBeacon(history, o.product, o.transcript, o.t0),
    cascadeInRank(history, o.product, o.transcript, o.rewindsAfter ?? []),
  ];
}
