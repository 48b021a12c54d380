/**
 * A waiting shopper's estimate and poll pace (docs/waiting-room.md#the-estimate), as pure
 * functions of what the process knows: the place, the room's settings and stock, the time to the
 * opening, the lobby's growth and the pace the line was heard to move at. `p50` is the wait at the
 * pace the line moves; `p90`, the worst case shown, at the slower of that and the pace the room
 * keeps even when no admitted shopper buys, plus the lag of the page's next poll (when the
 * shopper sees their turn, or the sell-out that ends their wait).
 */

export interface RoomPace {
  admitPerSecond: number;
  maxActive: number;
  admittedForSeconds: number;
  /** seats the room can fill at once: maxActive, or fewer when the units cover fewer shoppers */
  seats: number;
}

export interface Estimate {
  p50: number;
  p90: number;
}

/** The polls' jitter: a poll comes at most this many times the interval after the last one. */
const JITTER_MAX = 1.2;
/** The longest poll interval a waiting shopper is told. */
export const MAX_POLL_S = 30;
/** The line's pace is measured over the admissions heard in this window, once they span 2 s. */
export const PACE_WINDOW = { ms: 10_000, minSpanMs: 2_000 };
/**
 * The worst case takes the measured pace at half: it falls once the seats are full and admission
 * waits on purchases (250 a second measured, ~190 a second kept, in a line of 50,000).
 */
const MEASURED_MARGIN = 0.5;

/** Seats the room fills at once: maxActive, bounded by the units at `limitPerUser` a seat. */
export function seatsOf(room: { maxActive: number }, units: number, limitPerUser: number): number {
  return Math.max(1, Math.min(room.maxActive, Math.ceil(units / Math.max(1, limitPerUser))));
}

/**
 * Admissions a second when no admitted shopper buys: every seat frees only as its admission runs
 * out. The room keeps this pace whoever is ahead (short of a pause or the last units).
 */
export function slowestPace(room: RoomPace): number {
  return Math.min(room.admitPerSecond, room.seats / room.admittedForSeconds);
}

/**
 * When a shopper `position` places from admission polls again (before the jitter): a quarter of
 * the wait at the room's pace, from 1 s to MAX_POLL_S. The far back of a long line asks rarely,
 * the head every second; a shopper's interval shrinks as they move up, so the poll that shows
 * their turn (or the sell-out) comes at most one interval of this length, jittered, after it.
 */
export function pollSeconds(position: number, room: Pick<RoomPace, 'admitPerSecond'>): number {
  return Math.min(MAX_POLL_S, Math.max(1, position / room.admitPerSecond / 4));
}

/** The longest a page can take to see what happened: its next poll, jittered, and a round trip. */
const lagOf = (pollS: number) => JITTER_MAX * pollS + 0.5;

/**
 * A shopper with a ticket, `position` places from admission; `measured` the line's pace as heard
 * (admissions a second; null before any was heard: the room's pace then). `pastUnits`: the ticket
 * is past the shoppers the units serve at the most each may buy (seatsOf's bound): there the
 * admitter admits only as purchases leave units uncovered, and the sell-out that may end the wait
 * comes at the pace of the last purchases, which the admissions heard so far do not tell; the
 * worst case is then the room's slowest pace alone.
 */
export function lineEstimate(
  position: number,
  room: RoomPace,
  measured: number | null,
  pastUnits = false,
): Estimate {
  const typical = measured ?? room.admitPerSecond;
  const heard = pastUnits ? 0 : MEASURED_MARGIN * (measured ?? 0);
  const worst = Math.max(slowestPace(room), heard);
  return {
    p50: Math.ceil(position / typical),
    p90: Math.ceil(position / worst + lagOf(pollSeconds(position, room))),
  };
}

export interface LobbyNow {
  /** seconds to the opening (0 once it is due) */
  untilOpenS: number;
  /** shoppers in the lobby now, as last heard */
  lobby: number;
  /** shoppers joining it a second, as heard (lobby-growth.ts) */
  joinPerSecond: number;
  /** how long its growth has been heard (s): the join rate means little before GROWTH_HEARD_S */
  heardForS: number;
  /** shoppers the units can serve, at one unit each: the sale's units */
  servable: number;
}

/** The lobby's join rate is trusted once heard over this long. */
export const GROWTH_HEARD_S = 5;

/**
 * A shopper in the lobby: at the opening the shuffle puts them anywhere in the lobby as it is
 * then, those who join after them included. The lobby at the opening is projected from its growth
 * so far; half of it is ahead of a shopper at the median, 90 % of it in the worst case shown.
 * Nothing is measured before the opening: the median at the room's pace, the worst case at the
 * pace it keeps when nobody buys.
 */
export function lobbyEstimate(now: LobbyNow, room: RoomPace): Estimate {
  const atOpening = lobbyAtOpening(now);
  return {
    p50: Math.ceil(now.untilOpenS + (0.5 * atOpening) / room.admitPerSecond),
    p90: Math.ceil(
      now.untilOpenS +
        (0.9 * atOpening) / slowestPace(room) +
        lagOf(pollSeconds(0.9 * atOpening, room)),
    ),
  };
}

/**
 * The lobby's projected length at the opening: as long as it is, growing as it has. Until its
 * growth has been heard for GROWTH_HEARD_S (the first joiners: nobody knows yet how many follow),
 * at least the shoppers the units can serve: a place past them is ended by the sell-out once the
 * shoppers ahead bought, so no worst case needs more places than the units; the few who join that
 * early are told a long "at most" rather than one the lobby outgrows behind them.
 */
export function lobbyAtOpening(now: LobbyNow): number {
  const projected = now.lobby + now.joinPerSecond * now.untilOpenS;
  const unheard = now.untilOpenS > 0 && now.heardForS < GROWTH_HEARD_S;
  return Math.max(1, projected, unheard ? now.servable : 0);
}
