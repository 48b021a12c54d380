/**
 * The rules that flag identities in a sale's fairness report (docs/fairness.md). They are data,
 * hashed (SHA-256 of their canonical JSON) and pinned to a sale at its first note: a sale is
 * judged by the rules it opened with, and a change applies from the next sale (a new report).
 * What each rule saw is kept in the sale's notes, so a reader can apply them again.
 */
import { createHash } from 'node:crypto';
import type { Tried } from './figures.js';

export interface FairnessRules {
  version: 1;
  /** more identities than this from one address block (IPv4 /24, IPv6 /48): each is flagged */
  identitiesPerBlock: number;
  /** more identities than this behind one fingerprint the shop passed: each is flagged */
  identitiesPerFingerprint: number;
  /** this many missing or failed challenges at the door or more: flagged */
  challengeFailures: number;
}

/** What the notes keep of an identity that tried. */
export interface Noted extends Tried {
  /** missing or failed challenges at the door */
  fails: number;
}

export function defaultRules(identitiesPerBlock: number): FairnessRules {
  return { version: 1, identitiesPerBlock, identitiesPerFingerprint: 2, challengeFailures: 1 };
}

/** The canonical text of the rules (keys in a fixed order): what is hashed and pinned. */
export function rulesText(rules: FairnessRules): string {
  const { version, identitiesPerBlock, identitiesPerFingerprint, challengeFailures } = rules;
  return JSON.stringify({
    version,
    identitiesPerBlock,
    identitiesPerFingerprint,
    challengeFailures,
  });
}

export const rulesHash = (text: string) => createHash('sha256').update(text).digest('hex');

/** The identities the rules flag, and how many each rule flagged. */
export function flaggedBy(
  rules: FairnessRules,
  noted: Noted[],
): { flagged: Set<string>; byRule: Record<'block' | 'fingerprint' | 'challenge', number> } {
  const count = (key: (n: Noted) => string | undefined) => {
    const c = new Map<string, number>();
    for (const n of noted) {
      const k = key(n);
      if (k !== undefined) c.set(k, (c.get(k) ?? 0) + 1);
    }
    return c;
  };
  const blocks = count((n) => (n.block === 'unknown' ? undefined : n.block));
  const prints = count((n) => n.fingerprint);
  const flagged = new Set<string>();
  const byRule = { block: 0, fingerprint: 0, challenge: 0 };
  for (const n of noted) {
    const hits = {
      block: (blocks.get(n.block) ?? 0) > rules.identitiesPerBlock,
      fingerprint:
        n.fingerprint !== undefined && prints.get(n.fingerprint)! > rules.identitiesPerFingerprint,
      challenge: n.fails >= rules.challengeFailures,
    };
    for (const rule of ['block', 'fingerprint', 'challenge'] as const)
      if (hits[rule]) byRule[rule]++;
    if (hits.block || hits.fingerprint || hits.challenge) flagged.add(n.userId);
  }
  return { flagged, byRule };
}
