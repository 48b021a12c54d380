import { describe, expect, it } from 'vitest';
import { answersAfterFaults, check } from '../../load-tests/chaos/checker.js';
import type {
  FinalState,
  HistoryEntry,
  InvariantName,
  OrderRow,
  PurchaseOp,
} from '../../load-tests/chaos/history.js';
import { kindsFor, schedule } from '../../load-tests/chaos/nemesis.js';
import { resultNote } from '../../load-tests/chaos/report.js';
import { purchaseOutcome } from '../../load-tests/chaos/shoppers.js';

// A small correct run: 3 units of p1, u1 bought 1 (ok), u2 bought 1 (unknown -> order), u3 refused.
function buy(
  op: number,
  user: string,
  outcome: PurchaseOp['outcome'],
  orderId?: string,
): PurchaseOp {
  const status = outcome === 'ok' ? 202 : outcome === 'fail' ? 409 : 503;
  return {
    type: 'purchase',
    op,
    user,
    key: `k${op}`,
    product: 'p1',
    quantity: 1,
    invokeMs: op,
    completeMs: op + 1,
    outcome,
    status,
    orderId,
  };
}
function row(
  id: string,
  key: string,
  user: string,
  status: OrderRow['status'] = 'final',
  restocks = 0,
): OrderRow {
  return { id, idempotencyKey: key, product: 'p1', user, quantity: 1, status, restocks };
}
function healthy(): { history: HistoryEntry[]; final: FinalState } {
  return {
    history: [
      buy(1, 'u1', 'ok', 'o1'),
      buy(2, 'u2', 'unknown', 'o2'),
      buy(3, 'u3', 'fail'),
      { type: 'resolve', op: 2, answer: 'order', orderId: 'o2' },
    ],
    final: {
      durable: true,
      products: [
        { id: 'p1', seeded: 3, limitPerUser: 1, remaining: 1, held: 0, sold: 2, restocked: 0 },
      ],
      orders: [row('o1', 'k1', 'u1'), row('o2', 'k2', 'u2')],
      reconcileOk: true,
      reconcileLost: [],
    },
  };
}
function broken(results: ReturnType<typeof check>): InvariantName[] {
  return results.filter((r) => !r.ok).map((r) => r.name);
}

describe('the chaos checker', () => {
  it('passes a correct history', () => {
    const { history, final } = healthy();
    expect(broken(check(history, final))).toEqual([]);
  });

  it('names an oversell: more units acknowledged than seeded', () => {
    const { history, final } = healthy();
    history.push(buy(4, 'u4', 'ok', 'o4'), buy(5, 'u5', 'ok', 'o5'));
    final.orders.push(row('o4', 'k4', 'u4'), row('o5', 'k5', 'u5'));
    final.products[0] = { ...final.products[0]!, remaining: 0, sold: 4, restocked: -1 };
    const results = check(history, final);
    expect(broken(results)).toContain('no-oversell');
    expect(results.find((r) => r.name === 'no-oversell')!.counterExample).toMatch(
      /4 units in live order rows > 3 seeded|4 units acknowledged/,
    );
  });

  it('names a lost acknowledgement in durable mode, with the op, user and key', () => {
    const { history, final } = healthy();
    final.orders = final.orders.filter((o) => o.id !== 'o1');
    const results = check(history, final);
    expect(broken(results)).toEqual(['no-lost-ack']);
    expect(results.find((r) => r.name === 'no-lost-ack')!.counterExample).toContain(
      'op 1 user u1 key k1',
    );
  });

  it('in default mode counts the loss and passes only when reconciliation lists exactly it', () => {
    const { history, final } = healthy();
    final.durable = false;
    final.orders = final.orders.filter((o) => o.id !== 'o1');
    expect(broken(check(history, { ...final, reconcileLost: ['o1'] }))).toEqual([]);
    expect(
      check(history, { ...final, reconcileLost: ['o1'] }).find((r) => r.name === 'no-lost-ack')!
        .lost,
    ).toBe(1);
    expect(broken(check(history, { ...final, reconcileLost: [] }))).toEqual(['no-lost-ack']);
    expect(broken(check(history, { ...final, reconcileLost: ['o1', 'o7'] }))).toEqual([
      'no-lost-ack',
    ]);
    // a lost write whose row exists (the queue is on another shard) is a loss reconciliation lists
    const { history: h2, final: f2 } = healthy();
    const listed = { ...f2, durable: false, reconcileLost: ['o2'] };
    expect(broken(check(h2, listed))).toEqual([]);
    expect(check(h2, listed).find((r) => r.name === 'no-lost-ack')!.lost).toBe(1);
    // its units are sold and back in stock: conservation counts them twice, and only them
    const back = { ...listed, products: [{ ...listed.products[0]!, remaining: 2, lostUnits: 1 }] };
    expect(broken(check(h2, back))).toEqual([]);
    expect(
      broken(check(h2, { ...back, products: [{ ...back.products[0]!, lostUnits: 0 }] })),
    ).toEqual(['conservation']);
    // in durable mode nothing may be lost at all
    expect(broken(check(h2, { ...listed, durable: true }))).toEqual(['no-lost-ack']);
  });

  it('in default mode tells a loss reconciliation names from one lost without a trace; each can fail', () => {
    const { history, final } = healthy();
    // o1: its sale and its job both on the killed master, no row; o2: its row survived, named
    const lost: FinalState = {
      ...final,
      durable: false,
      orders: final.orders.filter((o) => o.id !== 'o1'),
      reconcileLost: ['o2'],
      killed: { slots: [[0, 5460]], queueSlot: 100, homeSlotOf: { o1: 200, o2: 9000 } },
    };
    const ok = check(history, lost).find((r) => r.name === 'no-lost-ack')!;
    expect(ok).toMatchObject({ ok: true, lost: 2, named: 1, traceless: 1 });
    expect(resultNote(ok)).toBe(
      "2 acknowledged sales lost: 1 named by reconciliation, 1 lost without a trace (default mode's window, only durable mode closes it: sale and job both on the killed master)",
    );
    const noLostAck = (f: FinalState) => check(history, f).find((r) => r.name === 'no-lost-ack')!;
    // its home segment on a master that lived: its marker should have named it
    const homeAlive = noLostAck({ ...lost, killed: { ...lost.killed!, homeSlotOf: { o1: 6000 } } });
    expect(homeAlive.ok).toBe(false);
    expect(homeAlive.counterExample).toBe(
      "op 1 user u1 key k1 product p1 x1 (202): lost, not named by reconciliation (home segment's slot 6000, queue's slot 100: not both on a killed master)",
    );
    // its job on a master that lived: its row should exist
    expect(noLostAck({ ...lost, killed: { ...lost.killed!, queueSlot: 9000 } }).ok).toBe(false);
    // no master killed after a lag: nothing may vanish
    const { killed: _, ...noKill } = lost;
    expect(noLostAck(noKill).counterExample).toContain(
      '(no master was killed after a replication lag)',
    );
    // the named one: reconciliation must name it, and name only acknowledged sales
    const restored = { ...lost, orders: final.orders };
    expect(noLostAck({ ...restored, reconcileLost: ['o2', 'o9'] }).ok).toBe(false);
    expect(noLostAck(restored)).toMatchObject({ ok: true, lost: 1, named: 1, traceless: 0 });
    // durable mode loses nothing, even on a killed master
    expect(noLostAck({ ...lost, durable: true }).ok).toBe(false);
  });

  it('in default mode a lost sale whose unit was sold again is no oversell, nor its buyer buying again', () => {
    const { history, final } = healthy();
    // o1 was lost in a failover (named): its unit went back to stock and u4 bought it; u1 again
    history.push(buy(4, 'u4', 'ok', 'o4'), buy(5, 'u1', 'ok', 'o5'));
    final.orders.push(row('o4', 'k4', 'u4'), row('o5', 'k5', 'u1'));
    const lost: FinalState = {
      ...final,
      durable: false,
      reconcileLost: ['o1'],
      products: [{ ...final.products[0]!, remaining: 0, sold: 4, lostUnits: 1 }],
    };
    const limitOne = {
      ...lost,
      products: [{ ...lost.products[0]!, seeded: 3, limitPerUser: 1 }],
    };
    expect(broken(check(history, limitOne))).toEqual([]);
    // the same sales with nothing lost: one unit more than seeded, and u1 past its limit
    const none = { ...limitOne, reconcileLost: [] };
    expect(broken(check(history, none))).toEqual(
      expect.arrayContaining(['no-oversell', 'no-duplicate']),
    );
    // one more sale than the lost one explains is still an oversell
    history.push(buy(6, 'u6', 'ok', 'o6'));
    final.orders.push(row('o6', 'k6', 'u6'));
    const more = { ...limitOne, orders: final.orders };
    expect(check(history, more).find((r) => r.name === 'no-oversell')!.counterExample).toBe(
      'product p1: 5 units in live order rows (1 lost in a failover) > 3 seeded',
    );
  });

  it('names a duplicate: two orders for one Idempotency-Key', () => {
    const { history, final } = healthy();
    final.orders.push(row('o1b', 'k1', 'u1'));
    const results = check(history, final);
    expect(broken(results)).toContain('no-duplicate');
    expect(results.find((r) => r.name === 'no-duplicate')!.counterExample).toContain(
      'key k1 user u1',
    );
  });

  it('names a buyer over limitPerUser', () => {
    const { history, final } = healthy();
    final.orders.push(row('o9', 'k9', 'u1'));
    expect(check(history, final).find((r) => r.name === 'no-duplicate')!.counterExample).toContain(
      '2 units of p1 > limit 1',
    );
  });

  it('names an unknown that resolved twice, and one never resolved', () => {
    const { history, final } = healthy();
    const twice = [...history, { type: 'resolve' as const, op: 2, answer: 'none' as const }];
    const results = check(twice, final);
    expect(broken(results)).toEqual(['unknown-resolved-once']);
    expect(results.find((r) => r.name === 'unknown-resolved-once')!.counterExample).toContain(
      'op 2 user u2 key k2',
    );
    const never = history.filter((h) => h.type !== 'resolve');
    expect(broken(check(never, final))).toEqual(['unknown-resolved-once']);
  });

  it('names an unknown answered "no order" while its key has an order row', () => {
    const { history, final } = healthy();
    const wrong = history.map((h) =>
      h.type === 'resolve' ? { ...h, answer: 'none' as const } : h,
    );
    expect(broken(check(wrong, final))).toEqual(['unknown-resolved-once']);
  });

  it('names a double restock, and an expired hold never restocked', () => {
    const { history, final } = healthy();
    final.orders[0] = row('o1', 'k1', 'u1', 'expired', 2);
    final.products[0] = { ...final.products[0]!, remaining: 1, sold: 1, restocked: 1 };
    const results = check(history, final);
    expect(broken(results)).toEqual(['restock-once']);
    expect(results.find((r) => r.name === 'restock-once')!.counterExample).toContain(
      'order o1 user u1 key k1 (op 1): expired, restocked 2 times',
    );
    final.orders[0] = row('o1', 'k1', 'u1', 'cancelled', 0);
    expect(broken(check(history, final))).toEqual(['restock-once']);
  });

  it('tells a late return (ok, with its delay) from a lost one (broken)', () => {
    const { history, final } = healthy();
    final.products[0] = { ...final.products[0]!, remaining: 1, sold: 1, restocked: 1 };
    final.orders[0] = { ...row('o1', 'k1', 'u1', 'expired', 1), returnDelayMs: 40 };
    expect(check(history, final).find((r) => r.name === 'restock-once')).toEqual({
      name: 'restock-once',
      ok: true,
    });
    final.orders[0] = { ...row('o1', 'k1', 'u1', 'expired', 1), returnDelayMs: 7_250 };
    expect(check(history, final).find((r) => r.name === 'restock-once')).toEqual({
      name: 'restock-once',
      ok: true,
      late: { count: 1, longestMs: 7_250, orderId: 'o1' },
    });
    final.orders[0] = row('o1', 'k1', 'u1', 'expired', 0);
    final.products[0] = { ...final.products[0]!, held: 1, restocked: 0 };
    const lost = check(history, final).find((r) => r.name === 'restock-once')!;
    expect(lost.ok).toBe(false);
    expect(lost.counterExample).toBe(
      'order o1 user u1 key k1 (op 1): expired, restocked 0 times (a lost return: not back after the settle phase)',
    );
  });

  it('names a broken conservation and a reconcile that is not ok', () => {
    const { history, final } = healthy();
    expect(
      broken(check(history, { ...final, products: [{ ...final.products[0]!, remaining: 2 }] })),
    ).toEqual(['conservation']);
    expect(broken(check(history, { ...final, reconcileOk: false }))).toEqual(['conservation']);
  });

  it('names a payment acknowledged while the order ends expired, and a pay and a cancel both acknowledged', () => {
    const { history, final } = healthy();
    const settle = (type: 'pay' | 'cancel', op: number): HistoryEntry => ({
      type,
      op,
      orderId: 'o1',
      user: 'u1',
      product: 'p1',
      invokeMs: op,
      completeMs: op + 1,
      outcome: 'ok',
      status: 200,
    });
    final.orders[0] = row('o1', 'k1', 'u1', 'paid');
    expect(broken(check([...history, settle('pay', 10)], final))).toEqual([]);
    final.orders[0] = row('o1', 'k1', 'u1', 'expired', 1);
    final.products[0] = { ...final.products[0]!, remaining: 1, sold: 1, restocked: 1 };
    const results = check([...history, settle('pay', 10)], final);
    expect(broken(results)).toEqual(['payment-window']);
    expect(results.find((r) => r.name === 'payment-window')!.counterExample).toBe(
      'pay op 10 user u1 order o1 acknowledged, but the order ends expired',
    );
    final.orders[0] = row('o1', 'k1', 'u1', 'cancelled', 1);
    expect(
      check([...history, settle('cancel', 11), settle('pay', 12)], final).find(
        (r) => r.name === 'payment-window',
      )!.counterExample,
    ).toContain('were both acknowledged');
  });
});

describe('answers after the faults', () => {
  const probe = (status: number, op: number): PurchaseOp => ({
    type: 'purchase',
    op,
    user: 'probe0',
    key: 'probe-0-p',
    product: 'p',
    quantity: 1,
    invokeMs: 1_000 * op,
    completeMs: 1_000 * op + 5_000,
    outcome: status === 202 ? 'ok' : status >= 400 && status < 500 ? 'fail' : 'unknown',
    status,
  });

  it('holds when every process answers, a refusal or a 503 included, after a silent try', () => {
    const r = answersAfterFaults([
      { api: 0, product: 'p', tries: [probe(202, 1)] },
      { api: 1, product: 'p', tries: [probe(0, 2), probe(409, 3)] },
      { api: 1, product: 'q', tries: [probe(503, 4)] },
    ]);
    expect(r).toEqual({ name: 'answers-after-faults', ok: true });
  });

  it('breaks on a process that answered none of its tries, and names it', () => {
    const r = answersAfterFaults([
      { api: 0, product: 'p', tries: [probe(202, 1)] },
      { api: 1, product: 'p', tries: [probe(0, 2), probe(0, 3), probe(0, 4)] },
    ]);
    expect(r.ok).toBe(false);
    expect(r.counterExample).toBe(
      'API process 1 answered no purchase of p in 3 tries after the faults, the last one op 4 user probe0 key probe-0-p product p x1 (0)',
    );
  });
});

describe('the chaos client', () => {
  it('counts 409 idempotency-key-in-use as unknown (an earlier try may still sell), other 4xx as refusals', () => {
    expect(purchaseOutcome(202, undefined)).toBe('ok');
    expect(purchaseOutcome(409, 'idempotency-key-in-use')).toBe('unknown');
    expect(purchaseOutcome(409, 'sold-out')).toBe('fail');
    expect(purchaseOutcome(429, 'rate-limited')).toBe('fail');
    expect(purchaseOutcome(503, 'store-unavailable')).toBe('unknown');
    expect(purchaseOutcome(0, undefined)).toBe('unknown');
    expect(purchaseOutcome(200, undefined)).toBe('unknown');
  });
});

describe('the nemesis schedule', () => {
  const cluster = kindsFor('cluster');

  it('is the same for the same seed, and another for another seed', () => {
    expect(schedule(7, 120_000, cluster)).toEqual(schedule(7, 120_000, cluster));
    expect(schedule(7, 120_000, cluster)).not.toEqual(schedule(8, 120_000, cluster));
  });

  it('fits every kind in a 60 s run, heals 3 s before the end, and never overlaps two Redis faults or two PostgreSQL pauses', () => {
    for (const seed of [1, 2, 3, 7, 42]) {
      const faults = schedule(seed, 60_000, cluster);
      expect(new Set(faults.map((f) => f.kind)).size).toBeGreaterThanOrEqual(6);
      for (const f of faults) expect(f.at + f.lasts).toBeLessThanOrEqual(57_000);
      for (const group of [
        ['kill-master', 'pause-master', 'cut-redis', 'delay-redis'],
        ['pause-postgres'],
      ]) {
        const mine = faults.filter((f) => group.includes(f.kind));
        for (let i = 1; i < mine.length; i++)
          expect(mine[i]!.at).toBeGreaterThanOrEqual(mine[i - 1]!.at + mine[i - 1]!.lasts);
      }
      // a paused master outlasts the node timeout, so its replica is promoted
      for (const f of faults.filter((f) => f.kind === 'pause-master'))
        expect(f.lasts).toBeGreaterThan(2_000);
    }
  });

  it('draws only the kinds a topology has', () => {
    expect(kindsFor('single')).not.toContain('kill-master');
    expect(kindsFor('cluster')).not.toContain('freeze-redis');
    const kinds = new Set(schedule(3, 120_000, kindsFor('single')).map((f) => f.kind));
    for (const k of kinds) expect(kindsFor('single')).toContain(k);
  });
});
