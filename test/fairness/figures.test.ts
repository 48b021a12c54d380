/**
 * The fairness report's arithmetic (docs/fairness.md) against hand-computed cases, and against
 * 1,000 simulated fair draws: a fair sale's u_F lands in the 95 % band about 95 % of the time.
 */
import { describe, expect, it } from 'vitest';
import {
  addressBlock,
  defaultRules,
  fairnessFigures,
  flaggedBy,
  pmf,
  quantiles,
  rulesHash,
  rulesText,
  type Tried,
} from '../../src/services/index.js';

/** The deployment's defaults: 3 identities a block, bursts of more than 5 in 10 s, no age rule. */
const RULES_3 = {
  identitiesPerBlock: 3,
  burstIdentities: 5,
  burstWindowSeconds: 10,
  accountMinAgeDays: null,
};
const NO_OTHER_RULE = { burstAddress: 0, burstBlock: 0, accountAge: 0, decoy: 0 };

const tried = (ids: string[], block = (i: number) => `10.0.${i}.0/24`): Tried[] =>
  ids.map((userId, i) => ({ userId, block: block(i) }));

describe('the hypergeometric band', () => {
  it('matches a case computed by hand: 3 draws from 10, 2 marked', () => {
    // P(0) = C(8,3)/C(10,3) = 56/120, P(1) = 2*28/120, P(2) = 8/120
    const h = { population: 10, marked: 2, draws: 3 };
    expect(pmf(h, 0)).toBeCloseTo(56 / 120, 8);
    expect(pmf(h, 1)).toBeCloseTo(56 / 120, 8);
    expect(pmf(h, 2)).toBeCloseTo(8 / 120, 8);
    expect(pmf(h, 3)).toBe(0);
    // CDF 0.467, 0.933, 1: the 2.5 % quantile is 0, the 97.5 % one is 2
    expect(quantiles(h, [0.025, 0.975])).toEqual([0, 2]);
  });

  it('matches a case computed by hand: 6 draws from 10, 4 marked', () => {
    // C(4,k) C(6,6-k) over C(10,6) = 210: 1, 24, 90, 80, 15; CDF 1, 25, 115, 195, 210 (/210)
    const h = { population: 10, marked: 4, draws: 6 };
    expect([0, 1, 2, 3, 4].map((k) => Math.round(pmf(h, k) * 210))).toEqual([1, 24, 90, 80, 15]);
    expect(quantiles(h, [0.025, 0.975])).toEqual([1, 4]);
  });

  it('agrees with a product form of the probabilities on a population of 100,000', () => {
    const h = { population: 100_000, marked: 1_000, draws: 500 };
    // P(0) = prod_{i<500} (99,000 - i) / (100,000 - i)
    let p0 = 1;
    for (let i = 0; i < 500; i++) p0 *= (99_000 - i) / (100_000 - i);
    expect(pmf(h, 0) / p0).toBeCloseTo(1, 6);
    const total = Array.from({ length: 501 }, (_, k) => pmf(h, k)).reduce((a, b) => a + b, 0);
    expect(total).toBeCloseTo(1, 6);
  });
});

describe('the figures', () => {
  it("a sale of 6 units among 10 identities, 4 of them one block's", () => {
    const ids = ['b1', 'b2', 'b3', 'b4', 's1', 's2', 's3', 's4', 's5', 's6'];
    const seen = tried(ids, (i) => (i < 4 ? '10.9.9.0/24' : `10.0.${i}.0/24`));
    const { flagged, byRule } = flaggedBy(
      defaultRules(RULES_3),
      seen.map((t) => ({ ...t, fails: 0 })),
    );
    expect([...flagged].sort()).toEqual(['b1', 'b2', 'b3', 'b4']);
    expect(byRule).toEqual({ block: 4, fingerprint: 0, challenge: 0, ...NO_OTHER_RULE });
    const units = new Map([
      ['b1', 1],
      ['b2', 1],
      ['b3', 1],
      ['b4', 1],
      ['s1', 1],
      ['s2', 1],
    ]);
    const f = fairnessFigures(seen, units, flagged);
    // mu = 6 * 4 / 10 = 2.4; A = 4 / 2.4 = 1.6667; band [1, 4] (the hand-computed case above)
    expect(f).toEqual({
      identities: 10,
      flagged: 4,
      units: 6,
      flaggedUnits: 4,
      fairShare: 2.4,
      band: [1, 4],
      advantage: 1.6667,
      advantageBand: [0.4167, 1.6667],
      top1PercentShare: 0.1667,
      clusters: [{ by: 'address-block', key: '10.9.9.0/24', identities: 4, units: 4 }],
    });
  });

  it('counts a buyer never noted as one who tried, and says A is undefined with no flag', () => {
    const f = fairnessFigures(tried(['a', 'b']), new Map([['c', 3]]), new Set());
    expect(f.identities).toBe(3);
    expect(f.units).toBe(3);
    expect(f.fairShare).toBe(0);
    expect(f.advantage).toBeNull();
    expect(f.top1PercentShare).toBe(1);
  });

  it('flags by fingerprint and by failed challenges', () => {
    const seen = [
      { userId: 'a', block: 'x', fingerprint: 'dev1', fails: 0 },
      { userId: 'b', block: 'y', fingerprint: 'dev1', fails: 0 },
      { userId: 'c', block: 'z', fingerprint: 'dev1', fails: 0 },
      { userId: 'd', block: 'w', fails: 1 },
      { userId: 'e', block: 'v', fails: 0 },
    ];
    const { flagged, byRule } = flaggedBy(defaultRules(RULES_3), seen);
    expect([...flagged].sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(byRule).toEqual({ block: 0, fingerprint: 3, challenge: 1, ...NO_OTHER_RULE });
  });

  it('hashes the canonical rules', () => {
    const text = rulesText(defaultRules(RULES_3));
    expect(text).toBe(
      '{"version":2,"identitiesPerBlock":3,"identitiesPerFingerprint":2,"challengeFailures":1,' +
        '"burst":{"identities":5,"windowSeconds":10},"accountMinAgeDays":null,"decoyFollows":1}',
    );
    expect(rulesHash(text)).toMatch(/^[0-9a-f]{64}$/);
    expect(rulesHash(rulesText(defaultRules({ ...RULES_3, identitiesPerBlock: 4 })))).not.toBe(
      rulesHash(text),
    );
  });

  it('names the address block: IPv4 /24, IPv6 /48', () => {
    expect(addressBlock('10.1.2.3')).toBe('10.1.2.0/24');
    expect(addressBlock('::ffff:10.1.2.3')).toBe('10.1.2.0/24');
    expect(addressBlock('2001:db8:abcd:12::1')).toBe('2001:db8:abcd::/48');
    expect(addressBlock('2001:db8::1')).toBe('2001:db8:0::/48');
  });
});

describe('1,000 simulated fair draws', () => {
  it('land u_F in the band 95 % of the time or more (and A in the advantage band)', () => {
    // Park-Miller, seeded: the same draws every run
    let state = 20_261_206;
    const next = () => (state = (state * 48_271) % 2_147_483_647) / 2_147_483_647;
    const E = 500;
    const F = 50;
    const U = 100;
    const ids = Array.from({ length: E }, (_, i) => `i${i}`);
    const flagged = new Set(ids.slice(0, F));
    const seen = tried(ids);
    let inside = 0;
    for (let draw = 0; draw < 1_000; draw++) {
      const pool = [...ids];
      const units = new Map<string, number>();
      for (let i = 0; i < U; i++) {
        const j = i + Math.floor(next() * (E - i));
        [pool[i], pool[j]] = [pool[j]!, pool[i]!];
        units.set(pool[i]!, 1);
      }
      const f = fairnessFigures(seen, units, flagged);
      const [low, high] = f.advantageBand!;
      if (f.advantage! >= low && f.advantage! <= high) inside++;
    }
    // the band [5, 15] of a mean of 10 holds 96.2 % of a fair draw's outcomes
    expect(quantiles({ population: E, marked: F, draws: U }, [0.025, 0.975])).toEqual([5, 15]);
    expect(inside).toBeGreaterThanOrEqual(950);
    expect(inside).toBe(INSIDE);
  });
});

const INSIDE = 962;
