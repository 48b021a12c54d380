/**
 * How honest the room's estimate was, from the shoppers' own history in `npm run bench:crowd`:
 * each shopper's wait (from their join to the answer that ended it: admitted, sold out or ended)
 * against the worst case (`estimatedWaitSeconds.p90`) they were shown. Split by whether their
 * join was answered in the lobby (before the opening: their place is drawn at the opening) or
 * with a ticket (after it: arrival order). Two readings of "the worst case shown": the one shown at the join,
 * and every one shown since (each poll's answer is a promise from that moment). Pure functions.
 */
import { percentile, table } from './report.js';

/** One shopper's wait in the room, as the client saw it (ms since the epoch, seconds shown). */
export interface WaitRecord {
  joinedAt: number;
  /** joined the lobby (no position yet: drawn at the opening) */
  lobby: boolean;
  /** the position answered at the join (null in the lobby) */
  positionAtJoin: number | null;
  /** how the wait ended */
  outcome?: string;
  /** the answer that ended the wait: admitted, sold out or ended */
  settledAt?: number;
  /** p50 and p90 shown at the join */
  p50AtJoinS: number;
  p90AtJoinS: number;
  /** the earliest moment any answer promised by (its time + its p90) */
  earliestPromiseAt: number;
}

export interface EstimateRow {
  joined: 'before the opening' | 'after the opening';
  shoppers: number;
  /** waited longer than the worst case shown at the join */
  pastWorstAtJoin: number;
  pastWorstAtJoinPct: number;
  /** waited past a promise made by any answer (join or poll) */
  pastAnyWorst: number;
  pastAnyWorstPct: number;
  waitP50S: number;
  waitP90S: number;
  shownP50AtJoinS: number;
  shownP90AtJoinS: number;
}

/** A wait is past the worst case when it settled later than promised (a second's rounding left). */
export function estimateRows(waits: readonly WaitRecord[]): EstimateRow[] {
  const settled = waits.filter((w) => w.settledAt !== undefined);
  const rows: EstimateRow[] = [];
  for (const joined of ['before the opening', 'after the opening'] as const) {
    const group = settled.filter((w) => w.lobby === (joined === 'before the opening'));
    const pastAtJoin = group.filter((w) => w.settledAt! > w.joinedAt + w.p90AtJoinS * 1_000);
    const pastAny = group.filter((w) => w.settledAt! > w.earliestPromiseAt);
    const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
    const waited = sorted(group.map((w) => (w.settledAt! - w.joinedAt) / 1_000));
    const pct = (n: number) => (group.length ? Math.round((n / group.length) * 1_000) / 10 : 0);
    rows.push({
      joined,
      shoppers: group.length,
      pastWorstAtJoin: pastAtJoin.length,
      pastWorstAtJoinPct: pct(pastAtJoin.length),
      pastAnyWorst: pastAny.length,
      pastAnyWorstPct: pct(pastAny.length),
      waitP50S: round1(percentile(waited, 50)),
      waitP90S: round1(percentile(waited, 90)),
      shownP50AtJoinS: percentile(sorted(group.map((w) => w.p50AtJoinS)), 50),
      shownP90AtJoinS: percentile(sorted(group.map((w) => w.p90AtJoinS)), 50),
    });
  }
  return rows;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** The table as the report prints it (the JSON line keeps the rows' keys). */
export function estimateTable(rows: readonly EstimateRow[]): string {
  return table(
    rows.map((r) => ({
      joined: r.joined,
      shoppers: r.shoppers,
      'past worst shown at join': `${r.pastWorstAtJoin} (${r.pastWorstAtJoinPct} %)`,
      'past any worst shown': `${r.pastAnyWorst} (${r.pastAnyWorstPct} %)`,
      'wait p50/p90 (s)': `${r.waitP50S} / ${r.waitP90S}`,
      'shown at join p50/p90 (s, median)': `${r.shownP50AtJoinS} / ${r.shownP90AtJoinS}`,
    })),
  );
}
