import { describe, expect, it } from 'vitest';
import type { OrderRow } from '../load-tests/chaos/checker.js';
import {
  checkRoom,
  type RoomHistoryEntry,
  type RoomOp,
  type RoomPurchaseOp,
} from '../load-tests/chaos/room-checks.js';

const OPENS = 1_000;
let nextOp = 0;

function answer(
  user: string,
  kind: RoomOp['kind'],
  at: number,
  state: RoomOp['state'],
  position: number | null = null,
): RoomOp {
  return {
    type: 'room',
    op: nextOp++,
    kind,
    user,
    product: 'room',
    invokeMs: at,
    completeMs: at + 5,
    status: kind === 'join' ? 201 : 200,
    state,
    position,
    token: state === 'admitted',
  };
}
function buy(user: string, at: number, saleToken = true): RoomPurchaseOp {
  return {
    type: 'purchase',
    op: nextOp++,
    user,
    key: `k-${user}`,
    product: 'room',
    quantity: 1,
    invokeMs: at,
    completeMs: at + 5,
    outcome: 'ok',
    status: 202,
    orderId: `o-${user}`,
    saleToken,
  };
}
const row = (user: string): OrderRow => ({
  id: `o-${user}`,
  idempotencyKey: `k-${user}`,
  product: 'room',
  user,
  quantity: 1,
  status: 'final',
  restocks: 0,
});

// a, in the pre-queue, then b and c after the opening (b first); one unit each for a and b,
// then c is told sold-out; d tried to buy without joining and was refused
function healthy(): { history: RoomHistoryEntry[]; orders: OrderRow[] } {
  return {
    history: [
      answer('a', 'join', 500, 'waiting'),
      answer('b', 'join', 1_100, 'waiting', 2),
      answer('b', 'join', 1_150, 'waiting', 2), // a second tab: the same place
      answer('c', 'join', 1_200, 'waiting', 3),
      answer('a', 'poll', 1_300, 'admitted'),
      buy('a', 1_310),
      answer('b', 'poll', 1_400, 'waiting', 1),
      answer('b', 'poll', 2_300, 'admitted'),
      buy('b', 2_310),
      answer('c', 'poll', 2_400, 'sold-out'),
      { ...buy('d', 1_500, false), outcome: 'fail', status: 403, orderId: undefined },
    ],
    orders: [row('a'), row('b')],
  };
}
/** c is admitted and buys the last unit; b is told sold-out without being admitted. */
function cBuysInsteadOfB(h: { history: RoomHistoryEntry[]; orders: OrderRow[] }): void {
  h.history = h.history.filter(
    (e) =>
      !(e.type !== 'resolve' && e.user === 'b' && e.invokeMs >= 2_300) &&
      !(e.type === 'room' && e.user === 'c' && e.state === 'sold-out'),
  );
  h.history.push(
    answer('c', 'poll', 2_200, 'admitted'),
    buy('c', 2_210),
    answer('b', 'poll', 2_400, 'sold-out'),
  );
  h.orders = [row('a'), row('c')];
}
const broken = (h: { history: RoomHistoryEntry[]; orders: OrderRow[] }) =>
  checkRoom(h.history, { product: 'room', opensAtMs: OPENS, orders: h.orders }).filter(
    (r) => !r.ok,
  );

describe("the chaos checker's waiting-room checks", () => {
  it('pass a correct history', () => {
    expect(broken(healthy())).toEqual([]);
  });

  it('room-fifo: a shopper who joined after the opening, passed by a later one', () => {
    const h = healthy();
    cBuysInsteadOfB(h);
    const [r, ...rest] = broken(h);
    expect(rest).toEqual([]);
    expect(r!.name).toBe('room-fifo');
    expect(r!.counterExample).toMatch(/^user b joined \(op \d+\) before user c/);
  });

  it('room-fifo: the pre-queue is shuffled, so passing someone who joined before the opening is not a breach', () => {
    const h = healthy();
    // a (pre-queue) is told sold-out while b, who joined after the opening, bought
    h.history = h.history.filter(
      (e) => !(e.type !== 'resolve' && e.user === 'a' && e.invokeMs >= 1_300),
    );
    h.history.push(answer('a', 'poll', 2_400, 'sold-out'));
    h.orders = [row('b')];
    expect(broken(h)).toEqual([]);
  });

  it('room-fifo: a join that got no answer (timeout, reset) or a 503 is not a place in line', () => {
    const h = healthy();
    // b's first try at 1 050 timed out, then c joined; b's answered join (1 250) is after c's
    h.history = h.history.filter(
      (e) => !(e.type === 'room' && e.user === 'b' && e.kind === 'join'),
    );
    h.history.push(
      { ...answer('b', 'join', 1_050, undefined), status: 0 },
      { ...answer('b', 'join', 1_060, undefined), status: 503 },
      answer('b', 'join', 1_250, 'waiting', 2),
    );
    // c's place is ahead of b's: c buying and b told sold-out is no breach
    cBuysInsteadOfB(h);
    expect(broken(h)).toEqual([]);
  });

  it('room-one-place: a second join that lands at the back of the line', () => {
    const h = healthy();
    h.history.push(answer('b', 'join', 1_250, 'waiting', 4));
    const r = broken(h);
    expect(r.map((x) => x.name)).toEqual(['room-one-place']);
    expect(r[0]!.counterExample).toMatch(
      /^user b: position 2 \(op \d+\), then 4 \(op \d+, join\)$/,
    );
  });

  it('room-one-place: answers sent at the same time are not ordered, so they are not compared', () => {
    const h = healthy();
    // sent before the first one was answered
    h.history.push({ ...answer('b', 'join', 1_102, 'waiting', 3) });
    expect(broken(h)).toEqual([]);
  });

  it('room-no-sale-without-admission: an acknowledged purchase without a token', () => {
    const h = healthy();
    h.history.push(buy('d', 1_600, false));
    h.orders.push(row('d'));
    const r = broken(h);
    expect(r.map((x) => x.name)).toEqual(['room-no-sale-without-admission']);
    expect(r[0]!.counterExample).toMatch(/user d key k-d: bought without a sale token/);
  });

  it('room-no-sale-without-admission: a purchase sent before the admitted answer', () => {
    const h = healthy();
    h.history = h.history.map((e) =>
      e.type === 'purchase' && e.user === 'b' ? { ...e, invokeMs: 1_420 } : e,
    );
    const r = broken(h);
    expect(r.map((x) => x.name)).toEqual(['room-no-sale-without-admission']);
    expect(r[0]!.counterExample).toMatch(/user b key k-b: bought before being admitted/);
  });

  it('room-no-sale-without-admission: an order row of a shopper never admitted (an unknown answer that sold)', () => {
    const h = healthy();
    h.orders.push(row('c'));
    const r = broken(h);
    expect(r.map((x) => x.name)).toEqual(['room-no-sale-without-admission']);
    expect(r[0]!.counterExample).toBe('order o-c user c key k-c: never admitted');
  });
});
