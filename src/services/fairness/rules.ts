/**
 * The rules that flag identities in a sale's fairness report (docs/fairness.md). They are data,
 * hashed (SHA-256 of their canonical JSON) and pinned to a sale at its first note: a sale is
 * judged by the rules it opened with, and a change applies from the next sale (a new report).
 * What each rule saw is kept in the sale's notes, so a reader can apply them again.
 */
import { createHash } from 'node:crypto';
import type { Tried } from './figures.js';

export interface FairnessRules {
  version: 2;
  /** more identities than this from one address block (IPv4 /24, IPv6 /48): each is flagged */
  identitiesPerBlock: number;
  /** more identities than this behind one fingerprint the shop passed: each is flagged */
  identitiesPerFingerprint: number;
  /** this many missing or failed challenges at the door or more: flagged */
  challengeFailures: number;
  /**
   * more identities than `identities` first seen from one address (and, apart, from one block)
   * within any `windowSeconds`: each of that window is flagged
   */
  burst: { identities: number; windowSeconds: number };
  /** an account younger than this many days at its first note is flagged; null: not judged */
  accountMinAgeDays: number | null;
  /** this many follows of the queue page's decoy link or more: flagged */
  decoyFollows: number;
}

export type FairnessRule =
  'block' | 'fingerprint' | 'challenge' | 'burstAddress' | 'burstBlock' | 'accountAge' | 'decoy';

export const FAIRNESS_RULES: readonly FairnessRule[] = [
  'block',
  'fingerprint',
  'challenge',
  'burstAddress',
  'burstBlock',
  'accountAge',
  'decoy',
];

/** What the notes keep of an identity that tried. */
export interface Noted extends Tried {
  /** missing or failed challenges at the door */
  fails: number;
  /** follows of the queue page's decoy link */
  decoys?: number | undefined;
}

/** The deployment's rule settings (FAIRNESS_* variables). */
export interface RuleSettings {
  identitiesPerBlock: number;
  burstIdentities: number;
  burstWindowSeconds: number;
  accountMinAgeDays: number | null;
}

export function defaultRules(settings: RuleSettings): FairnessRules {
  return {
    version: 2,
    identitiesPerBlock: settings.identitiesPerBlock,
    identitiesPerFingerprint: 2,
    challengeFailures: 1,
    burst: { identities: settings.burstIdentities, windowSeconds: settings.burstWindowSeconds },
    accountMinAgeDays: settings.accountMinAgeDays,
    decoyFollows: 1,
  };
}

/** The canonical text of the rules (keys in a fixed order): what is hashed and pinned. */
export function rulesText(rules: FairnessRules): string {
  return JSON.stringify({
    version: rules.version,
    identitiesPerBlock: rules.identitiesPerBlock,
    identitiesPerFingerprint: rules.identitiesPerFingerprint,
    challengeFailures: rules.challengeFailures,
    burst: { identities: rules.burst.identities, windowSeconds: rules.burst.windowSeconds },
    accountMinAgeDays: rules.accountMinAgeDays,
    decoyFollows: rules.decoyFollows,
  });
}

export const rulesHash = (text: string) => createHash('sha256').update(text).digest('hex');

const DAY_MS = 86_400_000;

/**
 * The identities in a burst: grouped by `key`, sorted by first note, every identity of a window
 * of `windowMs` that holds more than `max` of them (a sliding window over the sorted times).
 */
function inBursts(
  noted: readonly Noted[],
  key: (n: Noted) => string | undefined,
  max: number,
  windowMs: number,
): Set<string> {
  const groups = new Map<string, Noted[]>();
  for (const n of noted) {
    const k = key(n);
    if (k === undefined || n.at === undefined) continue;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(n);
  }
  const hit = new Set<string>();
  for (const g of groups.values()) {
    if (g.length <= max) continue;
    g.sort((x, y) => x.at! - y.at!);
    let from = 0;
    for (let to = 0; to < g.length; to++) {
      while (g[to]!.at! - g[from]!.at! >= windowMs) from++;
      if (to - from + 1 > max) for (let i = from; i <= to; i++) hit.add(g[i]!.userId);
    }
  }
  return hit;
}

/** The identities the rules flag, and how many each rule flagged. */
export function flaggedBy(
  rules: FairnessRules,
  noted: Noted[],
): { flagged: Set<string>; byRule: Record<FairnessRule, number> } {
  const count = (key: (n: Noted) => string | undefined) => {
    const c = new Map<string, number>();
    for (const n of noted) {
      const k = key(n);
      if (k !== undefined) c.set(k, (c.get(k) ?? 0) + 1);
    }
    return c;
  };
  const knownBlock = (one: Noted) => (one.block === 'unknown' ? undefined : one.block);
  const blocks = count(knownBlock);
  const prints = count((n) => n.fingerprint);
  // rules of an older version lack the newer rules: those judge nothing
  const burst = rules.burst;
  const windowMs = (burst?.windowSeconds ?? 0) * 1_000;
  const none = new Set<string>();
  const burstAddress = burst
    ? inBursts(noted, (n) => n.address || undefined, burst.identities, windowMs)
    : none;
  const burstBlock = burst ? inBursts(noted, knownBlock, burst.identities, windowMs) : none;
  const minAgeMs = (rules.accountMinAgeDays ?? 0) * DAY_MS;
  const flagged = new Set<string>();
  const byRule = Object.fromEntries(FAIRNESS_RULES.map((r) => [r, 0])) as Record<
    FairnessRule,
    number
  >;
  for (const n of noted) {
    const hits: Record<FairnessRule, boolean> = {
      block: (blocks.get(n.block) ?? 0) > rules.identitiesPerBlock,
      fingerprint:
        n.fingerprint !== undefined && prints.get(n.fingerprint)! > rules.identitiesPerFingerprint,
      challenge: n.fails >= rules.challengeFailures,
      burstAddress: burstAddress.has(n.userId),
      burstBlock: burstBlock.has(n.userId),
      accountAge:
        rules.accountMinAgeDays != null &&
        n.accountCreatedAt !== undefined &&
        n.at !== undefined &&
        n.at - n.accountCreatedAt < minAgeMs,
      decoy: rules.decoyFollows !== undefined && (n.decoys ?? 0) >= rules.decoyFollows,
    };
    let any = false;
    for (const rule of FAIRNESS_RULES) {
      if (!hits[rule]) continue;
      byRule[rule]++;
      any = true;
    }
    if (any) flagged.add(n.userId);
  }
  return { flagged, byRule };
}
