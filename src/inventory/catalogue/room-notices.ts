/**
 * What the waiting rooms' admitters of this process hear of their rooms: the notices of the
 * products' events channels that give a room work again or say who holds it (records/
 * product-events.ts), the wakes this process sends itself (a join or a purchase that woke a room
 * acts here at once, whether or not its notice reaches anyone), and a resync when notices may
 * have been lost (the subscriber reconnected). The catalogue, which hears the channels, tells
 * them here; the admitter listens.
 */
import type { ProductEvent, RoomSleep, WakeCause } from '../records/product-events.js';
import type { RoomHeard } from './room-heard.js';

export type RoomNotice =
  | { kind: 'wake'; cause: WakeCause }
  /** units came back: a room asleep on a notice has work again */
  | { kind: 'restock' }
  /** an operator changed the sale (pause, resume, pace, units, end), or a new sale began */
  | { kind: 'changed' | 'reseed' }
  /** notices may have been missed: look at every room again */
  | { kind: 'resync' }
  /** an admitter ticked the room, awake, under the lease of `fence` */
  | { kind: 'admit'; fence: number }
  /** an admitter let go of the room asleep on `sleep`, to look again in `lookInMs` (0: never) */
  | { kind: 'asleep'; fence: number; sleep: RoomSleep; lookInMs: number };

export type RoomNoticeListener = (productId: string, notice: RoomNotice) => void;

export class RoomNotices {
  private readonly listeners = new Set<RoomNoticeListener>();

  /** Calls `listener` with every notice until the returned function is called. */
  listen(listener: RoomNoticeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** `productId` is '' for a resync (every room). */
  tell(productId: string, notice: RoomNotice): void {
    for (const l of this.listeners) l(productId, notice);
  }
}

/**
 * A product event of the view's epoch, as the room hears it: the served counter and whether it
 * sleeps (for polls), and the notice for the admitters (null: none).
 */
export function roomNoticeOf(heard: RoomHeard | undefined, event: ProductEvent): RoomNotice | null {
  switch (event.kind) {
    case 'admit':
      heard?.hear(event.served, event.at);
      if (heard) heard.sleeping = null;
      return { kind: 'admit', fence: event.fence };
    case 'asleep':
      heard?.hear(event.served, event.at);
      if (heard) heard.sleeping = event.sleep;
      return { kind: 'asleep', fence: event.fence, sleep: event.sleep, lookInMs: event.lookInMs };
    case 'wake':
      if (heard) heard.sleeping = null;
      return { kind: 'wake', cause: event.cause };
    case 'restock':
      return { kind: 'restock' };
    case 'changed':
    case 'reseed':
      return { kind: event.kind };
    default:
      return null;
  }
}
