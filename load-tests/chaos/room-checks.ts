/**
 * The chaos run's checks of the waiting-room product (docs/waiting-room.md), from the clients'
 * history alone, like checker.ts: every answer of the room a shopper saw (joins and polls) is one
 * `room` entry; the room's purchases are ordinary purchase entries (checker.ts checks them too),
 * marked with whether they carried a sale token. No I/O here, so tests feed it broken histories.
 *   - room-fifo: among shoppers who joined after the opening, one whose join was answered before
 *     another's was sent is admitted if the later one is: a shopper told sold-out (or ended)
 *     without ever being admitted, while someone who joined after them was admitted, was passed;
 *   - room-one-place: a shopper's place never moves back: in real-time order, each waiting
 *     answer's position is at most the one before it (a second place, from a second connection
 *     or a second join, would put them at the back of the line);
 *   - default mode's window (docs/waiting-room.md): a place first answered while the room's slot
 *     sat on a master being lagged, then killed, may be lost with that master (a join, or the
 *     opening's shuffle that gave a lobby shopper their ticket). Moving back after that kill,
 *     or being passed by someone admitted after it, is then counted (`placesLost`), not broken;
 *     so is a place moving back after the kill by at most the admissions of the lag, answered
 *     since it began (the served counter rolled back with them: `rewound`);
 *   - room-no-sale-without-admission: every purchase acknowledged (or an order row) for the room
 *     product is by a shopper who was answered `admitted` with a token before sending it, and a
 *     purchase without a token is never acknowledged.
 */
import type {
  HistoryEntry,
  InvariantResult,
  OrderRow,
  RoomInvariantName,
  RoomOp,
  RoomPurchaseOp,
} from './history.js';

export type RoomHistoryEntry = HistoryEntry;

export type RoomInvariantResult = InvariantResult & { name: RoomInvariantName };

/**
 * A master holding the room's slot, lagged then killed (ms of the run): what it acknowledged from
 * `from` on may be gone, as the killed master was the only one to hold it; that includes the
 * admissions of the lag (served counter rolled back by at most `admissions`).
 */
export interface LostPlaceWindow {
  from: number;
  killed: number;
  /** the most the room could admit from `from` to `killed`: a second's credit, then the rate */
  admissions: number;
}

/** The window, if any, in which this answer may have been written on the killed master alone. */
const lostIn = (o: RoomOp | undefined, windows: LostPlaceWindow[]) =>
  o && windows.find((w) => o.completeMs >= w.from && o.invokeMs <= w.killed);

/** The first answer that gave the shopper a place in line (a position). */
const firstPlace = (ops: RoomOp[]) =>
  ops.find((o) => o.state === 'waiting' && typeof o.position === 'number');

const roomOps = (history: RoomHistoryEntry[], product: string) =>
  history.filter((h): h is RoomOp => h.type === 'room' && h.product === product);

/** Each shopper's answers, in the order they were sent. */
function byUser(ops: RoomOp[]): Map<string, RoomOp[]> {
  const out = new Map<string, RoomOp[]>();
  for (const o of [...ops].sort((a, b) => a.invokeMs - b.invokeMs)) {
    out.set(o.user, [...(out.get(o.user) ?? []), o]);
  }
  return out;
}

/** When the shopper was first answered admitted with a token (the answer's completion). */
const admittedAt = (ops: RoomOp[]) =>
  ops
    .filter((o) => o.state === 'admitted' && o.token)
    .reduce((t, o) => Math.min(t, o.completeMs), Infinity);

function fifo(
  history: RoomHistoryEntry[],
  product: string,
  opensAtMs: number,
  windows: LostPlaceWindow[],
): RoomInvariantResult {
  const users = [...byUser(roomOps(history, product))]
    .map(([user, ops]) => ({
      user,
      ops,
      join: ops.find((o) => o.kind === 'join' && o.status >= 200 && o.status < 300),
    }))
    .filter((u) => u.join !== undefined && u.join.invokeMs >= opensAtMs);
  let placesLost = 0;
  for (const a of users) {
    if (admittedAt(a.ops) < Infinity) continue;
    const told = a.ops.find((o) => o.state === 'sold-out' || o.state === 'ended');
    if (!told) continue; // still waiting when the run ended: nothing to say
    const passers = users.filter(
      (b) => b.join!.invokeMs > a.join!.completeMs && admittedAt(b.ops) < Infinity,
    );
    if (passers.length === 0) continue;
    // a's place lost with the killed master: passed only by those admitted after the kill
    const lost = lostIn(a.join, windows) ?? lostIn(firstPlace(a.ops), windows);
    const passer = passers.find((b) => !lost || admittedAt(b.ops) < lost.killed);
    if (!passer) {
      placesLost++;
      continue;
    }
    return {
      name: 'room-fifo',
      ok: false,
      counterExample: `user ${a.user} joined (op ${a.join!.op}) before user ${passer.user} (op ${passer.join!.op}), who was admitted, but was told ${told.state} (op ${told.op}) without being admitted`,
    };
  }
  return { name: 'room-fifo', ok: true, ...(placesLost > 0 && { placesLost }) };
}

/** The first answer whose position is behind an earlier answered one, with the lowest such one. */
function movedBack(placed: RoomOp[]): { before: RoomOp; later: RoomOp } | undefined {
  for (const later of placed) {
    const before = placed
      .filter((o) => o.completeMs < later.invokeMs && o.position! < later.position!)
      .sort((a, b) => a.position! - b.position!)[0];
    if (before) return { before, later };
  }
  return undefined;
}

function onePlace(
  history: RoomHistoryEntry[],
  product: string,
  windows: LostPlaceWindow[],
): RoomInvariantResult {
  let placesLost = 0;
  let rewound = 0;
  for (const [user, ops] of byUser(roomOps(history, product))) {
    let placed = ops.filter((o) => o.state === 'waiting' && typeof o.position === 'number');
    // per window: one place lost, and steps back adding up to at most its admissions
    const lostOnce = new Set<LostPlaceWindow>();
    const backBy = new Map<LostPlaceWindow, number>();
    for (let moved = movedBack(placed); moved; moved = movedBack(placed)) {
      const { before, later } = moved;
      const step = later.position! - before.position!;
      const after = windows.filter((w) => later.invokeMs >= w.killed);
      // the place itself was first answered in the lag, then read again after the kill
      const lost = lostIn(
        placed[0],
        after.filter((w) => !lostOnce.has(w)),
      );
      // the same place, behind the admissions the kill took back (answered since the lag began)
      const back = after.find(
        (w) => before.completeMs >= w.from && (backBy.get(w) ?? 0) + step <= w.admissions,
      );
      if (!lost && !back)
        return {
          name: 'room-one-place',
          ok: false,
          counterExample: `user ${user}: position ${before.position} (op ${before.op}), then ${later.position} (op ${later.op}, ${later.kind})`,
        };
      if (lost) {
        lostOnce.add(lost);
        placesLost++;
      } else {
        backBy.set(back!, (backBy.get(back!) ?? 0) + step);
        rewound++;
      }
      // from here the place (new or rolled back) must hold again
      placed = placed.filter((o) => o.invokeMs >= later.invokeMs);
    }
  }
  return {
    name: 'room-one-place',
    ok: true,
    ...(placesLost > 0 && { placesLost }),
    ...(rewound > 0 && { rewound }),
  };
}

function noSaleWithoutAdmission(
  history: RoomHistoryEntry[],
  product: string,
  orders: OrderRow[],
): RoomInvariantResult {
  const admitted = new Map(
    [...byUser(roomOps(history, product))].map(([user, ops]) => [user, admittedAt(ops)]),
  );
  const fail = (counterExample: string): RoomInvariantResult => ({
    name: 'room-no-sale-without-admission',
    ok: false,
    counterExample,
  });
  for (const h of history) {
    if (h.type !== 'purchase' || h.product !== product || h.outcome !== 'ok') continue;
    // marked false by the room's shoppers; a settling retry (run.ts) resends the try's own token
    if ((h as Partial<RoomPurchaseOp>).saleToken === false)
      return fail(`op ${h.op} user ${h.user} key ${h.key}: bought without a sale token`);
    if (!((admitted.get(h.user) ?? Infinity) <= h.invokeMs))
      return fail(`op ${h.op} user ${h.user} key ${h.key}: bought before being admitted`);
  }
  for (const o of orders) {
    if (o.product === product && (admitted.get(o.user) ?? Infinity) === Infinity)
      return fail(`order ${o.id} user ${o.user} key ${o.idempotencyKey}: never admitted`);
  }
  return { name: 'room-no-sale-without-admission', ok: true };
}

/** Every check of the room product; the run fails when any is not ok. */
export function checkRoom(
  history: RoomHistoryEntry[],
  room: {
    product: string;
    opensAtMs: number;
    orders: OrderRow[];
    /** default mode: each lag-then-kill of the master holding the room's slot */
    lostPlaceWindows?: LostPlaceWindow[];
  },
): RoomInvariantResult[] {
  const windows = room.lostPlaceWindows ?? [];
  return [
    fifo(history, room.product, room.opensAtMs, windows),
    onePlace(history, room.product, windows),
    noSaleWithoutAdmission(history, room.product, room.orders),
  ];
}
