/**
 * The gateway of the waiting room's scripts (lua/roomJoin-4.lua, lua/roomAdmit-6.lua,
 * lua/roomPlace-3.lua, lua/roomSeatDone-2.lua, lua/roomSoldOut-2.lua): their key order, arguments and reply tables, and
 * the decoding of their replies. The room hash's fields are ROOM_FIELD's (records/hash-fields.ts,
 * lua/includes/roomState.lua).
 */
import type { RedisClient } from '../../redis/connection.js';
import type { RoomKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';
import type { RoomSleep } from '../records/product-events.js';
import type { RoomCounters } from '../records/room-state.js';

const JOIN_REPLY = { joined: 1, held: 0, full: -1 } as const;
const ADMIT_REPLY = { ticked: 1, fenced: 0 } as const;
const SOLD_OUT_REPLY = { batch: 1, unready: 2, fenced: 0 } as const;
const scripts = {
  join: luaScript('roomJoin', JOIN_REPLY),
  admit: luaScript('roomAdmit', ADMIT_REPLY),
  place: luaScript('roomPlace', { none: 0, placed: 1 }),
  seatDone: luaScript('roomSeatDone'),
  soldOut: luaScript('roomSoldOut', SOLD_OUT_REPLY),
};

const roomKeyList = (room: RoomKeys) => [room.room, room.places, room.lobby, room.line];

/**
 * A join: a new place, the shopper's place already (`held`), or none (`full`); `woke` when the
 * shopper waits in a room asleep on a join (the joining process wakes it).
 */
export type JoinReply =
  | ({ code: 'joined' | 'held'; ticket: number; woke: boolean } & RoomCounters)
  | ({ code: 'full' } & RoomCounters);

/** Joins the shopper to the room (or finds their place), within `maxPlaces` places. */
export async function joinRoom(
  redis: RedisClient,
  room: RoomKeys,
  join: { userId: string; keepSeconds: number; maxPlaces: number },
): Promise<JoinReply> {
  const [code, ticket, served, opened, lobbyCount, woke] = await scripts.join.run<number[]>(
    redis,
    roomKeyList(room),
    [join.userId, join.keepSeconds, join.maxPlaces],
  );
  const counters = { served: served!, opened: opened === 1, lobbyCount: lobbyCount! };
  const name = scripts.join.replyName(code);
  return name === 'full'
    ? { code: name, ...counters }
    : { code: name, ticket: ticket!, woke: woke === 1, ...counters };
}

/** A shopper's place, read at once; null when they hold none (lua/roomPlace-3.lua). */
export async function readPlace(
  redis: RedisClient,
  room: RoomKeys,
  userId: string,
): Promise<({ ticket: number; admittedAt: number } & RoomCounters) | null> {
  const r = await scripts.place.run<number[]>(
    redis,
    [room.places, room.room, room.admitted],
    [userId],
  );
  if (scripts.place.replyName(r[0]) === 'none') return null;
  const [, ticket, served, opened, lobbyCount, admittedAt] = r as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { ticket, served, opened: opened === 1, lobbyCount, admittedAt };
}

/** One admitter tick's arguments (lua/roomAdmit-6.lua says what each does). */
export interface AdmitCall {
  fence: number;
  startsAt: number;
  seed: number;
  admitPerSecond: number;
  maxActive: number;
  admittedForMs: number;
  soldOut: boolean;
  keepSeconds: number;
  /** units left on sale; -1 when unknown */
  unitsLeft: number;
  /** lobby places this call shuffles at most */
  shuffleSteps: number;
  /** units one admitted shopper may buy */
  limitPerUser: number;
  /** the room's freed-seat count read before `unitsLeft` (a seat freed since counts as taken) */
  doneAtRead: number;
  /** the room may go to sleep when this tick admits nobody */
  mayIdle: boolean;
  /** an admission ending within this many ms is named in `expiring`, once (0: never) */
  expiringLeadMs: number;
}

/** `unitsLeft` when the units were not read: nobody is admitted (lua/roomAdmit-6.lua). */
export const UNITS_NOT_READ = -2;

/**
 * What the room waits for after a tick: '' it has work (tick again at the pace); `units` it has
 * shoppers to admit and was not given the units left (tick again at once, with them); `opening`
 * it is not open yet; otherwise what it sleeps on (lua/includes/roomState.lua).
 */
export type TickSleep = '' | 'units' | 'opening' | RoomSleep;

export type AdmitReply =
  | {
      code: 'ticked';
      served: number;
      next: number;
      admitted: number;
      /** admissions that ran out unused just now (no-shows: their seats are free again) */
      expired: number;
      active: number;
      now: number;
      opened: boolean;
      /** lobby places not yet shuffled into tickets (admission waits for them) */
      shuffleLeft: number;
      sleep: TickSleep;
      /**
       * Redis ms: the opening (`opening`); asleep, the first admission's end (`seat`) or the next
       * admission's lead, whichever comes first (0: none)
       */
      wakeAt: number;
      /** the shoppers admitted by this tick */
      admittedUsers: string[];
      /** the shoppers whose admission ran out unused at this tick (passed over) */
      passedUsers: string[];
      /** the shoppers whose admission ends within the lead, named this tick for the first time */
      expiringUsers: Array<{ userId: string; endsAt: number }>;
    }
  | { code: 'fenced'; newer: number };

/** One admitter tick. */
export async function admitRoom(
  redis: RedisClient,
  room: RoomKeys,
  call: AdmitCall,
): Promise<AdmitReply> {
  const r = await scripts.admit.run<Array<number | string | string[]>>(
    redis,
    [...roomKeyList(room), room.active, room.admitted],
    [
      call.fence,
      call.startsAt,
      call.seed,
      call.admitPerSecond,
      call.maxActive,
      call.admittedForMs,
      call.soldOut ? 1 : 0,
      call.keepSeconds,
      call.unitsLeft,
      call.shuffleSteps,
      call.limitPerUser,
      call.doneAtRead,
      call.mayIdle ? 1 : 0,
      call.expiringLeadMs,
    ],
  );
  if (scripts.admit.replyName(r[0]) === 'fenced') return { code: 'fenced', newer: Number(r[1]) };
  const [, served, next, admitted, expired, active, now, opened, shuffleLeft] = r as number[];
  return {
    code: 'ticked',
    served: served!,
    next: next!,
    admitted: admitted!,
    expired: expired!,
    active: active!,
    now: now!,
    opened: opened === 1,
    shuffleLeft: shuffleLeft!,
    sleep: String(r[9] ?? '') as TickSleep,
    wakeAt: Number(r[10] ?? 0),
    admittedUsers: users(r[11]),
    passedUsers: users(r[12]),
    expiringUsers: pairs(r[13]),
  };
}

/** A list of shoppers in a reply (an empty Lua table comes back as an empty array). */
const users = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);

/** Shoppers each followed by their admission's end (ZRANGEBYSCORE ... WITHSCORES). */
function pairs(value: unknown): Array<{ userId: string; endsAt: number }> {
  const flat = users(value);
  const out: Array<{ userId: string; endsAt: number }> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    out.push({ userId: flat[i]!, endsAt: Number(flat[i + 1]) });
  }
  return out;
}

/**
 * A bought shopper's seat is free, and counted (lua/roomSeatDone-2.lua): `woke` when it was freed
 * in a room asleep on its seats (the purchasing process wakes it).
 */
export async function freeSeat(
  redis: RedisClient,
  room: RoomKeys,
  userId: string,
): Promise<{ woke: boolean }> {
  const [, woke] = await scripts.seatDone.run<number[]>(redis, [room.active, room.room], [userId]);
  return { woke: woke === 1 };
}

/**
 * A batch of the shoppers waiting in a room sold out for good (lua/roomSoldOut-2.lua): `from`
 * the ticket before the first of `users` (the next ticket's shopper is `users[0]`); none: the walk
 * is done as far as the line goes. `unready` before the opening or while its shuffle goes on.
 */
export type SoldOutReply =
  | { code: 'batch'; from: number; served: number; users: string[] }
  | { code: 'unready' }
  | { code: 'fenced'; newer: number };

/** The next batch of the sold-out walk, once the tickets up to `writtenTo` are written. */
export async function soldOutBatch(
  redis: RedisClient,
  room: RoomKeys,
  call: { fence: number; writtenTo: number; size: number },
): Promise<SoldOutReply> {
  const r = await scripts.soldOut.run<Array<number | string>>(
    redis,
    [room.room, room.line],
    [call.fence, call.writtenTo, call.size],
  );
  const code = scripts.soldOut.replyName(Number(r[0]));
  if (code === 'fenced') return { code, newer: Number(r[1]) };
  if (code === 'unready') return { code };
  return { code, from: Number(r[1]), served: Number(r[2]), users: r.slice(3).map(String) };
}
