/**
 * Reading the Prometheus text format back (the merged /metrics of every API process): sums of
 * counters by label match, and a histogram's cumulative buckets, for the dashboard's rates.
 */

export interface Counters {
  /** the sum of `name`'s series whose labels include every pair of `match` */
  sum(name: string, match: Record<string, string>): number;
  /** the largest of those series (a gauge only one process keeps current); 0 when none */
  max(name: string, match: Record<string, string>): number;
  /** `name`'s cumulative buckets (le, count) summed over the series matching `match`, by le */
  buckets(name: string, match: Record<string, string>): Array<[number, number]>;
}

interface Series {
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Counters {
  const byName = new Map<string, Series[]>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!;
    const list = byName.get(m[1]!) ?? [];
    list.push({ labels, value: Number(m[3]) });
    byName.set(m[1]!, list);
  }
  const matching = (name: string, match: Record<string, string>) =>
    (byName.get(name) ?? []).filter((s) =>
      Object.entries(match).every(([k, v]) => s.labels[k] === v),
    );
  return {
    sum: (name, match) => matching(name, match).reduce((a, s) => a + s.value, 0),
    max: (name, match) => matching(name, match).reduce((a, s) => Math.max(a, s.value), 0),
    buckets(name, match) {
      const byLe = new Map<number, number>();
      for (const s of matching(`${name}_bucket`, match)) {
        const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
        byLe.set(le, (byLe.get(le) ?? 0) + s.value);
      }
      return [...byLe.entries()].sort((a, b) => a[0] - b[0]);
    },
  };
}

/**
 * The q-quantile (ms) of cumulative buckets (seconds), interpolated inside its bucket as
 * Prometheus's histogram_quantile does; null when there were no observations.
 */
export function quantile(buckets: Array<[number, number]>, fraction: number): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = fraction * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return prevLe * 1_000;
      const inBucket = count - prevCount;
      const share = inBucket > 0 ? (rank - prevCount) / inBucket : 0;
      return (prevLe + (le - prevLe) * share) * 1_000;
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe * 1_000;
}
