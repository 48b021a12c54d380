/**
 * What the shoppers saw while each fault lasted, credited by when a purchase was **started**
 * (a purchase started under one fault and answered under the next is the first one's), and only
 * while that fault was the one under way: figures of overlapping faults are not split between
 * them but set apart. Pure functions of the faults and the history.
 */
import type { PurchaseOp } from './history.js';
import type { FaultKind } from './nemesis.js';

export interface FaultWindow {
  kind: FaultKind;
  at: number;
  lasts: number;
  applied: boolean;
  healedAt?: number;
  /** the slots of the Redis server it struck (none for a process fault) */
  sickSlots?: Array<[number, number]>;
}

const endOf = (f: FaultWindow) => f.healedAt ?? f.at + f.lasts;

/** For each fault, the numbers (#i, from 1) of the other applied faults its window overlaps. */
export function overlapsOf(faults: FaultWindow[]): number[][] {
  return faults.map((f, i) =>
    f.applied
      ? faults.flatMap((g, j) =>
          j !== i && g.applied && g.at < endOf(f) && f.at < endOf(g) ? [j + 1] : [],
        )
      : [],
  );
}

/** The index of the one applied fault under way at `ms`, or undefined (none, or several). */
export function aloneAt(faults: FaultWindow[], ms: number): number | undefined {
  let found: number | undefined;
  for (let i = 0; i < faults.length; i++) {
    const f = faults[i]!;
    if (!f.applied || ms < f.at || ms >= endOf(f)) continue;
    if (found !== undefined) return undefined;
    found = i;
  }
  return found;
}

/** 202, or a definite refusal (409 sold out / limit, 410): the shopper knows where they stand. */
export const definite = (p: PurchaseOp) =>
  p.outcome !== 'unknown' && (p.status === 202 || p.status === 409 || p.status === 410);

const answerKind = (p: PurchaseOp) =>
  p.outcome === 'unknown' ? (p.status ? String(p.status) : 'timeout') : String(p.status);

export interface FaultLiveness {
  /** purchases started while this fault alone was under way, per second of that time */
  perSecond: number;
  /** their answers by kind ("202:12 409:3 503:4 timeout:1") */
  kinds: string;
  /** purchases started while it overlapped another fault: credited to neither */
  shared: number;
  overlaps: number[];
}

/** Per fault: what the purchases started while it alone was under way were answered. */
export function livenessOf(faults: FaultWindow[], purchases: PurchaseOp[]): FaultLiveness[] {
  const overlaps = overlapsOf(faults);
  const alone = faults.map(() => [] as PurchaseOp[]);
  const shared = faults.map(() => 0);
  for (const p of purchases) {
    const i = aloneAt(faults, p.invokeMs);
    if (i !== undefined) alone[i]!.push(p);
    else
      faults.forEach((f, j) => {
        if (f.applied && p.invokeMs >= f.at && p.invokeMs < endOf(f)) shared[j]!++;
      });
  }
  return faults.map((f, i) => {
    const byKind = new Map<string, number>();
    for (const p of alone[i]!) byKind.set(answerKind(p), (byKind.get(answerKind(p)) ?? 0) + 1);
    // the time it was alone: its window less the parts another fault shared
    let aloneMs = 0;
    for (let t = f.at; t < endOf(f); t += 100) if (aloneAt(faults, t) === i) aloneMs += 100;
    return {
      perSecond: alone[i]!.length / Math.max(0.1, aloneMs / 1000),
      kinds: [...byKind]
        .sort()
        .map(([k, v]) => `${k}:${v}`)
        .join(' '),
      shared: shared[i]!,
      overlaps: overlaps[i]!,
    };
  });
}

/** purchases started, and how many of them were answered definitively */
export interface Share {
  n: number;
  definite: number;
}

export interface KindAvailability {
  /** the first 3 s of each window while the fault was alone (the gap before a failover) */
  first3s: { all: Share; sickHome: Share; otherHome: Share };
  /**
   * The same, counting a purchase once (an Idempotency-Key with its tries: a shopper whose home
   * shard is struck retries, and each try would count again), by when its first try started;
   * answered if one of its tries was answered 202/409/410.
   */
  first3sByPurchase: { all: Share; sickHome: Share; otherHome: Share };
  /** second by second from the fault's start, while it was alone */
  perSecond: { all: Share[]; sickHome: Share[]; otherHome: Share[] };
}

const share = (): Share => ({ n: 0, definite: 0 });
const add = (s: Share, p: PurchaseOp) => {
  s.n++;
  if (definite(p)) s.definite++;
};

/**
 * Per fault kind: the share of purchases answered definitively among those started while a
 * fault of that kind alone was under way, by second from its start, split by whether the
 * shopper's home shard (`homeSlot`) was the struck one. A fault that struck no Redis server
 * counts every shopper as "other home".
 */
export function availabilityOf(
  faults: FaultWindow[],
  purchases: PurchaseOp[],
  homeSlot: (p: PurchaseOp) => number,
): Partial<Record<FaultKind, KindAvailability>> {
  const out: Partial<Record<FaultKind, KindAvailability>> = {};
  // a purchase is its key's tries: the first says when it started, any definite one answers it
  const tries = new Map<string, PurchaseOp[]>();
  for (const p of purchases) {
    const k = `${p.user}\u0000${p.key}`;
    const all = tries.get(k);
    if (all) all.push(p);
    else tries.set(k, [p]);
  }
  const firstOf = new Set<PurchaseOp>();
  const answered = new Set<PurchaseOp>();
  for (const all of tries.values()) {
    const first = all.reduce((a, b) => (b.invokeMs < a.invokeMs ? b : a));
    firstOf.add(first);
    if (all.some(definite)) answered.add(first);
  }
  for (const p of purchases) {
    const i = aloneAt(faults, p.invokeMs);
    if (i === undefined) continue;
    const f = faults[i]!;
    const a = (out[f.kind] ??= {
      first3s: { all: share(), sickHome: share(), otherHome: share() },
      first3sByPurchase: { all: share(), sickHome: share(), otherHome: share() },
      perSecond: { all: [], sickHome: [], otherHome: [] },
    });
    const slot = homeSlot(p);
    const sick = (f.sickSlots ?? []).some(([lo, hi]) => slot >= lo && slot <= hi);
    const side = sick ? 'sickHome' : 'otherHome';
    const s = Math.floor((p.invokeMs - f.at) / 1000);
    for (const key of ['all', side] as const) {
      const row = a.perSecond[key];
      while (row.length <= s) row.push(share());
      add(row[s]!, p);
      if (s < 3) add(a.first3s[key], p);
      if (s < 3 && firstOf.has(p)) {
        a.first3sByPurchase[key].n++;
        if (answered.has(p)) a.first3sByPurchase[key].definite++;
      }
    }
  }
  for (const a of Object.values(out))
    for (const key of ['all', 'sickHome', 'otherHome'] as const)
      a.perSecond[key] = Array.from(
        { length: a.perSecond.all.length },
        (_, s) => a.perSecond[key][s] ?? share(),
      );
  return out;
}

export const pct = (s: Share) => (s.n ? `${Math.round((100 * s.definite) / s.n)} %` : '-');

/** The availability table's lines, for the console and the markdown report. */
export function availabilityLines(a: Partial<Record<FaultKind, KindAvailability>>): string[] {
  const lines = [
    "| fault alone | shoppers | first 3 s answered (202/409/410) | purchases (a key's tries as one) | by second from its start |",
    '|---|---|---|---|---|',
  ];
  for (const [kind, k] of Object.entries(a)) {
    for (const side of ['all', 'sickHome', 'otherHome'] as const) {
      const first = k.first3s[side];
      const label = {
        all: 'all',
        sickHome: 'home on the struck shard',
        otherHome: 'home elsewhere',
      }[side];
      lines.push(
        `| ${side === 'all' ? kind : ''} | ${label} | ${pct(first)} of ${first.n} | ${pct(k.first3sByPurchase[side])} of ${k.first3sByPurchase[side].n} | ${k.perSecond[side].map(pct).join(', ')} |`,
      );
    }
  }
  return lines;
}
