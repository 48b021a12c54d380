/**
 * How fast a room's lobby grows, as this process hears it: every join answered here (and every
 * place read) carries the lobby's length at that moment, whoever's it is, so a process sees the
 * whole lobby's growth from its share of the joins. The estimate before the opening projects the
 * lobby to the opening from it (estimate.ts): a shopper's place is drawn from the whole lobby at
 * the opening, those who join after them included.
 */

/** The recent growth is read over this window (a surge toward the opening shows in it). */
const RECENT_MS = 30_000;
/** Observations kept per room: enough for the window at any join rate (one per 100 ms). */
const MAX_SAMPLES = 300;
/** Rooms remembered (oldest forgotten first: their growth is learned again). */
const MAX_ROOMS = 10_000;

interface Growth {
  first: { at: number; count: number };
  /** [ms, lobby length], oldest first, at least 100 ms apart */
  samples: Array<[number, number]>;
}

export class LobbyGrowth {
  private readonly rooms = new Map<string, Growth>();

  /** The lobby of `room` held `count` shoppers at `now` (ms). */
  observe(room: string, count: number, now: number): void {
    let g = this.rooms.get(room);
    if (!g) {
      if (this.rooms.size >= MAX_ROOMS) this.rooms.delete(this.rooms.keys().next().value!);
      g = { first: { at: now, count }, samples: [[now, count]] };
      this.rooms.set(room, g);
      return;
    }
    const last = g.samples[g.samples.length - 1]!;
    if (count <= last[1]) return;
    if (now - last[0] < 100 && g.samples.length > 1) last[1] = count;
    else g.samples.push([now, count]);
    if (g.samples.length > MAX_SAMPLES) g.samples.shift();
  }

  /** The longest lobby heard of (0: none). */
  count(room: string): number {
    const g = this.rooms.get(room);
    return g ? g.samples[g.samples.length - 1]![1] : 0;
  }

  /**
   * Shoppers joining a second, as heard: the faster of the growth since the first observation and
   * over the last RECENT_MS (a lobby that speeds up toward the opening), 0 before two of them.
   */
  perSecond(room: string, now: number): number {
    const g = this.rooms.get(room);
    if (!g) return 0;
    const [lastAt, last] = g.samples[g.samples.length - 1]!;
    const rate = (fromAt: number, from: number) =>
      lastAt > fromAt ? ((last - from) * 1_000) / Math.max(lastAt - fromAt, now - fromAt) : 0;
    const recent = g.samples.find(([at]) => at >= now - RECENT_MS) ?? g.samples[0]!;
    return Math.max(rate(g.first.at, g.first.count), rate(recent[0], recent[1]));
  }

  /** How long the lobby's growth has been heard (ms: from the first observation to the last). */
  heardForMs(room: string): number {
    const g = this.rooms.get(room);
    return g ? g.samples[g.samples.length - 1]![0] - g.first.at : 0;
  }

  /** A new sale of the product: its lobby starts again. */
  forget(room: string): void {
    this.rooms.delete(room);
  }
}
