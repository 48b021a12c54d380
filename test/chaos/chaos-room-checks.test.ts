import { describe, expect, it } from 'vitest';
import type { OrderRow, RoomOp, RoomPurchaseOp } from '../../load-tests/chaos/history.js';
import {
  checkRoom,
  type LostPlaceWindow,
  type RoomHistoryEntry,
} from '../../load-tests/chaos/room-checks.js';

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

// a, in the lobby, then b and c after the opening (b first); one unit each for a and b,
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
      !('user' in e && e.user === 'b' && e.invokeMs >= 2_300) &&
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

  it('room-fifo: the lobby is shuffled, so passing someone who joined before the opening is not a breach', () => {
    const h = healthy();
    // a (lobby) is told sold-out while b, who joined after the opening, bought
    h.history = h.history.filter((e) => !('user' in e && e.user === 'a' && e.invokeMs >= 1_300));
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

// default mode: the room's master lagged from 3 000 and killed at 3 500 (up to 10 admissions)
const LAG: LostPlaceWindow = { from: 3_000, killed: 3_500, admissions: 10 };
const judged = (history: RoomHistoryEntry[], windows: LostPlaceWindow[] = [LAG]) =>
  checkRoom(history, { product: 'room', opensAtMs: OPENS, orders: [], lostPlaceWindows: windows });
const onePlaceOf = (history: RoomHistoryEntry[], windows?: LostPlaceWindow[]) =>
  judged(history, windows).find((r) => r.name === 'room-one-place')!;

describe("the room checks in default mode's failover window", () => {
  // e joined before the opening; its ticket (position 5) was read while the master lagged, then
  // the shuffle was lost with it and done again: position 40
  const reshuffled = () => [
    answer('e', 'join', 500, 'waiting'),
    answer('e', 'poll', 3_100, 'waiting', 5),
    answer('e', 'poll', 3_600, 'waiting', 40),
    answer('e', 'poll', 4_600, 'waiting', 30),
  ];

  it('room-one-place: a ticket first answered in the lag and lost with the killed master is counted, not broken', () => {
    expect(onePlaceOf(reshuffled())).toEqual({ name: 'room-one-place', ok: true, placesLost: 1 });
  });

  it('room-one-place: the same history without the window (durable mode, or the room on another master) breaks', () => {
    expect(onePlaceOf(reshuffled(), []).counterExample).toMatch(
      /^user e: position 5 \(op \d+\), then 40 \(op \d+, poll\)$/,
    );
  });

  it('room-one-place: a place first answered before the lag began is not excused', () => {
    const h = reshuffled().map((e) =>
      e.position === 5 ? { ...e, invokeMs: 2_900, completeMs: 2_990 } : e,
    );
    expect(onePlaceOf(h).ok).toBe(false);
  });

  it('room-one-place: a second place answered before the kill is not excused', () => {
    const h = reshuffled().map((e) =>
      e.position === 40 ? { ...e, invokeMs: 3_400, completeMs: 3_450 } : e,
    );
    expect(onePlaceOf(h).counterExample).toMatch(/^user e: position 5 \(op \d+\), then 40/);
  });

  it('room-one-place: a join answered in the lag, lost (404), and joined again at the back is counted', () => {
    const h = [
      answer('f', 'join', 3_100, 'waiting', 3),
      { ...answer('f', 'poll', 3_700, undefined), status: 404 },
      answer('f', 'join', 4_800, 'waiting', 9),
    ];
    expect(onePlaceOf(h)).toEqual({ name: 'room-one-place', ok: true, placesLost: 1 });
  });

  it('room-one-place: after the lost place, the new one must hold: a later move back breaks', () => {
    // past what the lag could admit (10), and no second lag
    const h = [...reshuffled(), answer('e', 'poll', 5_600, 'waiting', 41)];
    expect(onePlaceOf(h).counterExample).toMatch(/^user e: position 30 \(op \d+\), then 41/);
  });

  // g's place predates the lag; answers since it began counted the lag's admissions, which the
  // kill took back: the served counter rolled back, g's ticket did not change
  const rolledBack = (back: number) => [
    answer('g', 'join', 1_100, 'waiting', 50),
    answer('g', 'poll', 3_200, 'waiting', 30),
    answer('g', 'poll', 3_800, 'waiting', 30 + back),
  ];

  it("room-one-place: moved back after the kill by at most the lag's admissions is counted", () => {
    expect(onePlaceOf(rolledBack(10))).toEqual({ name: 'room-one-place', ok: true, rewound: 1 });
  });

  it('room-one-place: moved back by more than the lag could admit breaks', () => {
    expect(onePlaceOf(rolledBack(11)).counterExample).toMatch(
      /^user g: position 30 \(op \d+\), then 41 \(op \d+, poll\)$/,
    );
  });

  it('room-one-place: moved back against an answer from before the lag breaks', () => {
    const h = rolledBack(10).map((e) =>
      e.position === 30 ? { ...e, invokeMs: 2_800, completeMs: 2_900 } : e,
    );
    expect(onePlaceOf(h).ok).toBe(false);
  });

  it("room-one-place: steps back after one kill add up: together past the lag's admissions breaks", () => {
    const h = [
      ...rolledBack(6),
      answer('g', 'poll', 4_500, 'waiting', 31),
      answer('g', 'poll', 5_000, 'waiting', 36),
    ];
    expect(onePlaceOf(h).counterExample).toMatch(/^user g: position 31 \(op \d+\), then 36/);
  });

  // h joined in the lag; its place was lost; i, who joined after, was admitted
  const passed = (iAdmittedAt: number) => [
    answer('h', 'join', 3_100, 'waiting', 4),
    answer('i', 'join', 3_300, 'waiting', 5),
    answer('i', 'poll', iAdmittedAt, 'admitted'),
    answer('h', 'poll', 6_000, 'sold-out'),
  ];
  const fifoOf = (history: RoomHistoryEntry[], windows?: LostPlaceWindow[]) =>
    judged(history, windows).find((r) => r.name === 'room-fifo')!;

  it('room-fifo: passed, after the kill, by a later joiner while the place was lost is counted', () => {
    expect(fifoOf(passed(4_000))).toEqual({ name: 'room-fifo', ok: true, placesLost: 1 });
    expect(fifoOf(passed(4_000), []).counterExample).toMatch(
      /^user h joined \(op \d+\) before user i/,
    );
  });

  it('room-fifo: passed before the kill (the place still there) breaks', () => {
    expect(fifoOf(passed(3_400)).counterExample).toMatch(/^user h joined \(op \d+\) before user i/);
  });
});
