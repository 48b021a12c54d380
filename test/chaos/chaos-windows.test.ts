import { describe, expect, it } from 'vitest';
import type { PurchaseOp } from '../../load-tests/chaos/history.js';
import {
  availabilityOf,
  livenessOf,
  overlapsOf,
  type FaultWindow,
} from '../../load-tests/chaos/windows.js';

const buy = (op: number, invokeMs: number, status: number, user = `u${op}`): PurchaseOp => ({
  type: 'purchase',
  op,
  user,
  key: `k${op}`,
  product: 'p1',
  quantity: 1,
  invokeMs,
  completeMs: invokeMs + 4_000,
  outcome: status === 202 ? 'ok' : status === 409 || status === 410 ? 'fail' : 'unknown',
  status,
});

// kill-master 10-20 s on slots 0-99; kill-api 18-25 s overlaps it; pause-postgres 30-33 s alone
const faults: FaultWindow[] = [
  { kind: 'kill-master', at: 10_000, lasts: 10_000, applied: true, sickSlots: [[0, 99]] },
  { kind: 'kill-api', at: 18_000, lasts: 7_000, applied: true },
  { kind: 'pause-postgres', at: 30_000, lasts: 3_000, applied: true },
];

describe('the chaos faults table', () => {
  it('says which faults overlapped', () => {
    expect(overlapsOf(faults)).toEqual([[2], [1], []]);
  });

  it('credits a purchase to the fault under way when it started, and one started under two faults to neither', () => {
    const history = [
      buy(1, 11_000, 503), // kill-master alone, answered (late) during kill-api
      buy(2, 12_500, 202),
      buy(3, 19_000, 503), // both: shared
      buy(4, 21_000, 202), // kill-api alone
      buy(5, 31_000, 409), // pause-postgres alone
      buy(6, 40_000, 202), // no fault
    ];
    const l = livenessOf(faults, history);
    expect(l.map((x) => [x.kinds, x.shared, x.overlaps])).toEqual([
      ['202:1 503:1', 1, [2]],
      ['202:1', 1, [1]],
      ['409:1', 0, []],
    ]);
    // 2 purchases over the 8 s it was alone
    expect(l[0]!.perSecond).toBeCloseTo(0.25, 5);
  });
});

describe('the chaos availability figures', () => {
  it('gives, per fault kind and second from its start, the share answered 202/409/410, split by the home shard', () => {
    const history = [
      buy(1, 10_100, 503, 'sick'),
      buy(2, 10_200, 202, 'well'),
      buy(3, 11_100, 0, 'sick'),
      buy(4, 11_200, 409, 'well'),
      buy(5, 12_300, 410, 'sick'),
      buy(6, 13_500, 202, 'well'), // 4th second: not in the first 3 s
      buy(7, 19_000, 202, 'well'), // kill-api too: not counted
      buy(8, 30_500, 503, 'well'),
    ];
    const slot = (p: PurchaseOp) => (p.user === 'sick' ? 42 : 9_000);
    const a = availabilityOf(faults, history, slot);
    expect(a['kill-master']!.first3s).toEqual({
      all: { n: 5, definite: 3 },
      sickHome: { n: 3, definite: 1 },
      otherHome: { n: 2, definite: 2 },
    });
    expect(a['kill-master']!.perSecond.all.map((s) => [s.n, s.definite])).toEqual([
      [2, 1],
      [2, 1],
      [1, 1],
      [1, 1],
    ]);
    expect(a['kill-master']!.perSecond.sickHome.map((s) => s.n)).toEqual([1, 1, 1, 0]);
    // each try its own key here: as many purchases as tries
    expect(a['kill-master']!.first3sByPurchase).toEqual(a['kill-master']!.first3s);
    // a fault that struck no Redis server: every shopper's home is elsewhere
    expect(a['pause-postgres']!.first3s.otherHome).toEqual({ n: 1, definite: 0 });
    expect(a['kill-api']).toBeUndefined();
  });

  it('counts a purchase once however many tries its key took, answered if one try was', () => {
    const retry = (op: number, at: number, status: number, key: string, user: string) => ({
      ...buy(op, at, status, user),
      key,
    });
    const history = [
      // a struck shopper's three tries, none answered; then one answered on its third try
      retry(1, 10_100, 503, 'ka', 'sick'),
      retry(2, 10_400, 503, 'ka', 'sick'),
      retry(3, 10_800, 0, 'ka', 'sick'),
      retry(4, 10_200, 503, 'kb', 'sick2'),
      retry(5, 11_200, 503, 'kb', 'sick2'),
      retry(6, 12_900, 202, 'kb', 'sick2'),
      // a healthy shopper, one try; and one whose first try started before the fault
      retry(7, 10_300, 202, 'kc', 'well'),
      retry(8, 9_900, 0, 'kd', 'well2'),
      retry(9, 10_500, 202, 'kd', 'well2'),
    ];
    const slot = (p: PurchaseOp) => (p.user.startsWith('sick') ? 42 : 9_000);
    const a = availabilityOf(faults, history, slot)['kill-master']!;
    expect(a.first3s.all).toEqual({ n: 8, definite: 3 });
    expect(a.first3sByPurchase).toEqual({
      all: { n: 3, definite: 2 },
      sickHome: { n: 2, definite: 1 },
      otherHome: { n: 1, definite: 1 },
    });
  });
});
