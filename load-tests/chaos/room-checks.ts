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
 *   - room-no-sale-without-admission: every purchase acknowledged (or an order row) for the room
 *     product is by a shopper who was answered `admitted` with a token before sending it, and a
 *     purchase without a token is never acknowledged.
 */
import type { HistoryEntry, InvariantResult, OrderRow, PurchaseOp } from './checker.js';

export type RoomState = 'waiting' | 'admitted' | 'sold-out' | 'ended';

/** One answer of the room to a shopper: its join (POST) or a poll (GET). */
export interface RoomOp {
  type: 'room';
  op: number;
  kind: 'join' | 'poll';
  user: string;
  product: string;
  invokeMs: number;
  completeMs: number;
  status: number;
  state?: RoomState;
  /** 1 = next to be admitted; null before the opening */
  position?: number | null;
  /** the answer carried a sale token */
  token?: boolean;
}

/** A purchase of the room product, marked with whether it carried a sale token. */
export type RoomPurchaseOp = PurchaseOp & { saleToken: boolean };

export type RoomHistoryEntry = HistoryEntry;

export type RoomInvariantName = 'room-fifo' | 'room-one-place' | 'room-no-sale-without-admission';

export type RoomInvariantResult = InvariantResult & { name: RoomInvariantName };

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
): RoomInvariantResult {
  const users = [...byUser(roomOps(history, product))]
    .map(([user, ops]) => ({
      user,
      ops,
      join: ops.find((o) => o.kind === 'join' && o.status >= 200 && o.status < 300),
    }))
    .filter((u) => u.join !== undefined && u.join.invokeMs >= opensAtMs);
  for (const a of users) {
    if (admittedAt(a.ops) < Infinity) continue;
    const told = a.ops.find((o) => o.state === 'sold-out' || o.state === 'ended');
    if (!told) continue; // still waiting when the run ended: nothing to say
    const passer = users.find(
      (b) => b.join!.invokeMs > a.join!.completeMs && admittedAt(b.ops) < Infinity,
    );
    if (passer)
      return {
        name: 'room-fifo',
        ok: false,
        counterExample: `user ${a.user} joined (op ${a.join!.op}) before user ${passer.user} (op ${passer.join!.op}), who was admitted, but was told ${told.state} (op ${told.op}) without being admitted`,
      };
  }
  return { name: 'room-fifo', ok: true };
}

function onePlace(history: RoomHistoryEntry[], product: string): RoomInvariantResult {
  for (const [user, ops] of byUser(roomOps(history, product))) {
    const placed = ops.filter((o) => o.state === 'waiting' && typeof o.position === 'number');
    for (const later of placed) {
      const before = placed.find(
        (o) => o.completeMs < later.invokeMs && o.position! < later.position!,
      );
      if (before)
        return {
          name: 'room-one-place',
          ok: false,
          counterExample: `user ${user}: position ${before.position} (op ${before.op}), then ${later.position} (op ${later.op}, ${later.kind})`,
        };
    }
  }
  return { name: 'room-one-place', ok: true };
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
  room: { product: string; opensAtMs: number; orders: OrderRow[] },
): RoomInvariantResult[] {
  return [
    fifo(history, room.product, room.opensAtMs),
    onePlace(history, room.product),
    noSaleWithoutAdmission(history, room.product, room.orders),
  ];
}
