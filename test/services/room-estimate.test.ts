/**
 * The waiting room's estimate as pure functions (src/services/room/estimate.ts, lobby-growth.ts):
 * a lobby shopper's worst case counts the lobby as it will be at the opening (its growth
 * projected), a shopper in line gets the pace heard, never a worst case faster than the pace the
 * room keeps when nobody buys, and the poll interval grows with the place.
 */
import { describe, expect, it } from 'vitest';
import {
  lineEstimate,
  lobbyAtOpening,
  lobbyEstimate,
  pollSeconds,
  seatsOf,
  slowestPace,
} from '../../src/services/room/estimate.js';
import { LobbyGrowth } from '../../src/services/room/lobby-growth.js';

const room = { admitPerSecond: 100, maxActive: 200, admittedForSeconds: 10, seats: 200 };

describe('the lobby', () => {
  it('grows as heard: the faster of its whole growth and its last 30 s', () => {
    const g = new LobbyGrowth();
    expect(g.perSecond('r', 0)).toBe(0);
    g.observe('r', 10, 0);
    expect(g.perSecond('r', 0)).toBe(0);
    // 10 a second for 60 s, then 100 a second for 10 s
    g.observe('r', 610, 60_000);
    expect(g.perSecond('r', 60_000)).toBe(10);
    g.observe('r', 1_610, 70_000);
    expect(g.count('r')).toBe(1_610);
    // since the first: 1600 / 70 s; over the last 30 s (from 610 at 60 s): 100 a second
    expect(g.perSecond('r', 70_000)).toBe(100);
    // nobody joined for 10 s more: the recent pace falls with the time that passed
    expect(g.perSecond('r', 80_000)).toBe(50);
    // a shorter lobby heard late (an older answer) changes nothing
    g.observe('r', 1_000, 80_000);
    expect(g.count('r')).toBe(1_610);
    g.forget('r');
    expect(g.count('r')).toBe(0);
  });

  it('is projected to the opening: 50 now, 10 a second, 20 s to go = 250', () => {
    const heard = { heardForS: 60, servable: 100 };
    expect(lobbyAtOpening({ untilOpenS: 20, lobby: 50, joinPerSecond: 10, ...heard })).toBe(250);
    // worst case: 90 % of 250 ahead at the pace kept with nobody buying (20 a second), the
    // page's poll (a quarter of 225 / 100 s, 1 s at least, +20 %) and a round trip
    expect(lobbyEstimate({ untilOpenS: 20, lobby: 50, joinPerSecond: 10, ...heard }, room)).toEqual(
      {
        p50: Math.ceil(20 + 125 / 100),
        p90: Math.ceil(20 + 225 / 20 + 1.2 * 1 + 0.5),
      },
    );
    // without the growth, the same shopper was told a fifth of the lobby's length
    const flat = lobbyEstimate({ untilOpenS: 20, lobby: 50, joinPerSecond: 0, ...heard }, room);
    expect(flat.p90).toBe(Math.ceil(20 + 45 / 20 + 1.2 + 0.5));
  });

  it('counts the shoppers the units can serve until its growth is heard for 5 s', () => {
    // the third joiner, 30 s before the opening, the growth heard for 1 s (no rate yet), 100 units
    const early = { untilOpenS: 30, lobby: 3, joinPerSecond: 0, heardForS: 1, servable: 100 };
    expect(lobbyAtOpening(early)).toBe(100);
    // median: 30 s + half of 100 at 100 a second = 30.5 -> 31; worst: 30 s + 90 at 20 a second
    // (4.5 s) + the poll (a quarter of 90 / 100 s, 1 s at least, +20 %) and a round trip (1.7 s)
    expect(lobbyEstimate(early, room)).toEqual({ p50: 31, p90: 37 });
    // heard for 5 s: the lobby as projected (3: nobody joined meanwhile), 30 + 0.135 + 1.7 -> 32
    expect(lobbyAtOpening({ ...early, heardForS: 5 })).toBe(3);
    expect(lobbyEstimate({ ...early, heardForS: 5 }, room)).toEqual({ p50: 31, p90: 32 });
    // a projection past the units stands: 50 + 10 a second for 30 s = 350
    expect(lobbyAtOpening({ ...early, lobby: 50, joinPerSecond: 10 })).toBe(350);
    // at the opening the lobby is what it is: no floor
    expect(lobbyAtOpening({ ...early, untilOpenS: 0 })).toBe(3);
  });

  it('says how long its growth was heard: from the first observation to the last', () => {
    const g = new LobbyGrowth();
    expect(g.heardForMs('r')).toBe(0);
    g.observe('r', 1, 1_000);
    expect(g.heardForMs('r')).toBe(0);
    g.observe('r', 5, 3_500);
    // an observation that adds nobody is not a sample: the span is the growth's
    g.observe('r', 5, 9_000);
    expect(g.heardForMs('r')).toBe(2_500);
    g.observe('r', 9, 7_000);
    expect(g.heardForMs('r')).toBe(6_000);
  });
});

describe('the line', () => {
  it('keeps the pace the room has when nobody buys, bounded by the seats the units fill', () => {
    expect(slowestPace(room)).toBe(20);
    // 100 units at 4 a shopper: 25 seats, each held 10 s at worst
    const seats = seatsOf(room, 100, 4);
    expect(seats).toBe(25);
    expect(slowestPace({ ...room, seats })).toBe(2.5);
  });

  it('takes the pace heard for the median, and half of it (never below the slowest) for the worst', () => {
    // 300 ahead, heard 60 a second: about 5 s; worst at 30 a second, 10 s, plus the poll's lag
    expect(lineEstimate(300, room, 60)).toEqual({
      p50: 5,
      p90: Math.ceil(300 / 30 + 1.2 * pollSeconds(300, room) + 0.5),
    });
    // heard slower than the room keeps when nobody buys (a short line, fed by its joins): the
    // worst case is the room's, 20 a second
    expect(lineEstimate(300, room, 30).p90).toBe(Math.ceil(300 / 20 + 1.2 * 1 + 0.5));
    // nothing heard yet: the room's pace for the median
    expect(lineEstimate(300, room, null).p50).toBe(3);
  });

  it('past the shoppers the units serve, takes the slowest pace for the worst (the sell-out ends it)', () => {
    // 300 ahead, heard 60 a second, the ticket past the units' shoppers: the median as heard
    // (5 s), the worst at 20 a second, 15 s, plus the poll (300 / 100 / 4 = 0.75 -> 1 s, +20 %)
    // and a round trip: 16.7 -> 17
    expect(lineEstimate(300, room, 60, true)).toEqual({ p50: 5, p90: 17 });
    // within them: half the pace heard, 30 a second: 10 + 1.7 -> 12
    expect(lineEstimate(300, room, 60, false)).toEqual({ p50: 5, p90: 12 });
  });

  it('polls less often far back: every second at the head, 30 s at most', () => {
    expect(pollSeconds(1, room)).toBe(1);
    expect(pollSeconds(2_000, room)).toBe(5);
    expect(pollSeconds(50_000, room)).toBe(30);
  });
});
