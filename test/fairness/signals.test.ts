/**
 * The signals' rules (docs/fairness.md) against hand-computed cases: bursts per address and per
 * address block (more than N identities first seen within W seconds), an account's age from the
 * shop's token, and the queue page's decoy link. Each case names who is flagged and why.
 */
import { describe, expect, it } from 'vitest';
import {
  defaultRules,
  flaggedBy,
  rulesHash,
  rulesText,
  type Noted,
} from '../../src/services/index.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 11, 7, 12, 0, 0);
/** bursts of more than 2 identities in 10 s; accounts younger than 7 days */
const rules = defaultRules({
  identitiesPerBlock: 100,
  burstIdentities: 2,
  burstWindowSeconds: 10,
  accountMinAgeDays: 7,
});
const zero = {
  block: 0,
  fingerprint: 0,
  challenge: 0,
  burstAddress: 0,
  burstBlock: 0,
  accountAge: 0,
  decoy: 0,
};
const noted = (userId: string, o: Partial<Noted>): Noted => ({
  userId,
  block: `10.0.${userId.length}.0/24`,
  fails: 0,
  ...o,
});

describe('the burst rules', () => {
  it('flags every identity of a window holding more than N from one address', () => {
    // one address: a at 0 s, b at 4 s, c at 9.999 s: three within 10 s (> 2): all three;
    // d at 20 s: its window (10.001 s..20 s) holds d alone
    const ip = '10.1.1.7';
    const block = '10.1.1.0/24';
    const list = [
      noted('a', { address: ip, block, at: T0 }),
      noted('b', { address: ip, block, at: T0 + 4_000 }),
      noted('c', { address: ip, block, at: T0 + 9_999 }),
      noted('d', { address: ip, block, at: T0 + 20_000 }),
    ];
    const { flagged, byRule } = flaggedBy(rules, list);
    expect([...flagged].sort()).toEqual(['a', 'b', 'c']);
    // the block saw the same four: the same three
    expect(byRule).toEqual({ ...zero, burstAddress: 3, burstBlock: 3 });
  });

  it('does not flag three identities 10 s apart: a window is shorter than W', () => {
    const ip = '10.1.1.8';
    const list = ['a', 'b', 'c'].map((u, i) =>
      noted(u, { address: ip, block: '10.1.1.0/24', at: T0 + i * 5_000 }),
    );
    // a 0 s, b 5 s, c 10 s: a..c spans 10 s, not within it; a,b and b,c are 2 each
    expect(flaggedBy(rules, list).flagged.size).toBe(0);
  });

  it('flags a block whose addresses each stay under N', () => {
    // three addresses of 10.2.2.0/24, one identity each, within 2 s: the block's burst only
    const list = ['x', 'y', 'z'].map((u, i) =>
      noted(u, { address: `10.2.2.${i + 1}`, block: '10.2.2.0/24', at: T0 + i * 1_000 }),
    );
    const { flagged, byRule } = flaggedBy(rules, list);
    expect([...flagged].sort()).toEqual(['x', 'y', 'z']);
    expect(byRule).toEqual({ ...zero, burstBlock: 3 });
  });

  it('leaves identities noted without a time alone (older notes)', () => {
    const list = ['a', 'b', 'c'].map((u) =>
      noted(u, { address: '10.3.3.3', block: '10.3.3.0/24' }),
    );
    expect(flaggedBy(rules, list).flagged.size).toBe(0);
  });
});

describe("the account's age rule", () => {
  it('flags an account younger than N days at its first note, and only when the token said', () => {
    const list = [
      // 6.9 days old when first noted: flagged
      noted('young', { at: T0, accountCreatedAt: T0 - 6.9 * DAY }),
      // exactly 7 days: not younger than 7
      noted('week', { at: T0, accountCreatedAt: T0 - 7 * DAY }),
      // a year: no
      noted('old', { at: T0, accountCreatedAt: T0 - 365 * DAY }),
      // the token carried no such claim: not judged
      noted('unknown', { at: T0 }),
    ];
    const { flagged, byRule } = flaggedBy(rules, list);
    expect([...flagged]).toEqual(['young']);
    expect(byRule).toEqual({ ...zero, accountAge: 1 });
    // without FAIRNESS_ACCOUNT_AGE_CLAIM the rule is null: nobody
    const off = defaultRules({
      ...rules,
      burstIdentities: 2,
      burstWindowSeconds: 10,
      accountMinAgeDays: null,
    });
    expect(flaggedBy(off, list).flagged.size).toBe(0);
  });
});

describe('the decoy rule', () => {
  it('flags an identity that followed the decoy link once or more', () => {
    const list = [
      noted('follower', { decoys: 1 }),
      noted('twice', { decoys: 2 }),
      noted('shopper', { decoys: 0 }),
      noted('plain', {}),
    ];
    const { flagged, byRule } = flaggedBy(rules, list);
    expect([...flagged].sort()).toEqual(['follower', 'twice']);
    expect(byRule).toEqual({ ...zero, decoy: 2 });
  });
});

describe("the rules' data", () => {
  it('is in the hash: a burst window or an age changed is another set of rules', () => {
    const settings = {
      identitiesPerBlock: 3,
      burstIdentities: 5,
      burstWindowSeconds: 10,
      accountMinAgeDays: 7,
    };
    const base = rulesHash(rulesText(defaultRules(settings)));
    for (const change of [
      { burstIdentities: 6 },
      { burstWindowSeconds: 11 },
      { accountMinAgeDays: 8 },
      { accountMinAgeDays: null },
    ]) {
      expect(rulesHash(rulesText(defaultRules({ ...settings, ...change })))).not.toBe(base);
    }
  });

  it('judges an older version (no burst, age or decoy data) by its own rules only', () => {
    const v1 = {
      version: 1,
      identitiesPerBlock: 3,
      identitiesPerFingerprint: 2,
      challengeFailures: 1,
    };
    const list = ['a', 'b', 'c'].map((u, i) =>
      noted(u, { address: '10.4.4.4', block: '10.4.4.0/24', at: T0 + i, decoys: 1 }),
    );
    const { flagged } = flaggedBy(v1 as unknown as Parameters<typeof flaggedBy>[0], list);
    expect(flagged.size).toBe(0);
  });
});
