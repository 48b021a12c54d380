import { describe, expect, it } from 'vitest';
import {
  check,
  type FinalState,
  type HistoryEntry,
  type InvariantName,
  type OrderRow,
  type PurchaseOp,
} from '../load-tests/chaos/checker.js';

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
    expect(broken(check(history, { ...final, reconcileLost: ['o1', 'o2'] }))).toEqual([
      'no-lost-ack',
    ]);
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

  it('names a broken conservation and a reconcile that is not ok', () => {
    const { history, final } = healthy();
    expect(
      broken(check(history, { ...final, products: [{ ...final.products[0]!, remaining: 2 }] })),
    ).toEqual(['conservation']);
    expect(broken(check(history, { ...final, reconcileOk: false }))).toEqual(['conservation']);
  });
});
