/**
 * What one process heard of a waiting room's admissions, from the product's admit notices: the
 * served counter (every ticket up to it is admitted) and when each recent batch was admitted, so
 * a poll is answered from memory. A process that joined late, or missed notices (a subscriber
 * reconnect makes the catalogue reload the view, and this with it), knows nothing before its first
 * notice: such polls are answered from Redis (`knows` says which).
 */
import type { RoomSleep } from '../records/product-events.js';

/** Batches remembered: at 10 ticks a second, the last few minutes of admissions. */
const MAX_BATCHES = 4_096;

export class RoomHeard {
  /** every ticket up to this one is admitted; -1 until the first notice */
  served = -1;
  /**
   * What the room sleeps on, as last heard (an asleep notice); null once heard awake (an admit or
   * a wake notice), or never heard asleep. A shopper waiting in a room heard asleep on a join is
   * one whose join's wake was lost.
   */
  sleeping: RoomSleep | null = null;
  /** tickets heard of from this one on (earlier ones: ask Redis) */
  private from = -1;
  /** [last ticket of the batch, admitted at ms], oldest first */
  private readonly batches: Array<[number, number]> = [];

  hear(served: number, at: number): void {
    if (served <= this.served) return;
    if (this.from < 0) this.from = this.served < 0 ? served + 1 : this.served + 1;
    this.served = served;
    this.batches.push([served, at]);
    if (this.batches.length > MAX_BATCHES) {
      const [dropped] = this.batches.splice(0, this.batches.length - MAX_BATCHES);
      this.from = dropped![0] + 1;
    }
  }

  /**
   * The served counter as a place read from Redis gave it (the room open): a room asleep sends no
   * notice, so a process that started since learns it here. Tickets up to it were admitted at
   * times not heard: their polls ask Redis.
   */
  floor(served: number): void {
    if (served <= this.served) return;
    this.served = served;
    this.from = Math.max(this.from, served + 1);
  }

  /**
   * Whether `ticket`'s state is known here: waiting (above served) needs only the counter; an
   * admitted one needs its batch's time.
   */
  knows(ticket: number): boolean {
    return this.served >= 0 && (ticket > this.served || ticket >= this.from);
  }

  /**
   * Admissions a second as heard over the last `windowMs` (to `now`, ms), or null before this
   * process heard admissions over `minSpanMs` of it: the pace the line moves at, measured.
   */
  pace(now: number, windowMs: number, minSpanMs: number): number | null {
    const from = this.batches.find(([, at]) => at >= now - windowMs);
    if (!from) return null;
    // the counter the window starts from: the batch before it, else the first batch heard
    const i = this.batches.indexOf(from);
    const [startServed, startAt] = i > 0 ? this.batches[i - 1]! : from;
    const span = now - startAt;
    if (span < minSpanMs || this.served <= startServed) return null;
    return ((this.served - startServed) * 1_000) / span;
  }

  /** When `ticket` (<= served, known) was admitted (ms). */
  admittedAt(ticket: number): number {
    for (const [last, at] of this.batches) if (ticket <= last) return at;
    return 0;
  }
}
