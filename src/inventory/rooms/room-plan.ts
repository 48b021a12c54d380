/**
 * What one process plans for one waiting room (docs/waiting-room.md#what-it-costs-redis): when it
 * next acts for it (a time, or never until a notice), the lease it holds while the room has work,
 * and what it learnt of the room from its own ticks and from the other processes' notices. A room
 * costs Redis only while it has work, or when it is due: its opening, a seat's end, a slow look
 * at a room asleep with people in line (a notice may have been lost).
 */
import type { HeldLock } from '../../lock/index.js';
import type { RoomSleep } from '../records/product-events.js';
import type { TickSleep } from './protocol.js';

/**
 * A room that admitted someone stays awake this long before it may sleep: a wake (a notice, a
 * lease attempt per process, a units read) costs more than a second of idle ticks, so a line that
 * keeps coming in is not put to sleep and woken at every join.
 */
export const IDLE_AFTER_MS = 1_000;

export class RoomPlan {
  /** when this process acts for the room next (local ms; Infinity: when a notice says so) */
  dueAt = 0;
  timer: NodeJS.Timeout | undefined;
  /** the room's lease, held while it has work */
  held: HeldLock | undefined;
  /** an action under way (a lease attempt, a tick) */
  acting: Promise<void> | undefined;
  /** woken while acting: act again right after */
  again = false;
  /**
   * woken, and no tick seen since (its own, or another holder's admit notice): a notice that the
   * room sleeps, which may come from a tick before the wake, does not stand this process down
   */
  woken = false;
  /** the sale epoch the rest was learnt in */
  epoch = 0;
  /** what the room sleeps on, as last learnt; undefined: awake, or not known */
  sleep: RoomSleep | undefined;
  /**
   * the next tick reads the units left (someone waits and a seat is free, or a wake): otherwise
   * it reads none, and a tick that finds shoppers it could admit asks for them (a tick more)
   */
  wantUnits = false;
  /** someone waited at the last tick (a slow look at the room reads every segment then) */
  waiting = false;
  /** when this hold last admitted someone (a room that works lingers awake) */
  lastWorkAt = 0;
  announcedAt = 0;
  /** when every segment was last read, those known empty too (a lost restock heals) */
  fullReadAt = 0;
  nudgedAt = 0;
  /** the fencing token of this process's latest hold of the lease (0: none) */
  myFence = 0;
  /** the newest fencing token heard of in a notice */
  heardFence = 0;
  /** this process's gauges of the room were set by its latest hold (metrics) */
  reported = false;
  /** the sold-out walk told every ticket up to this one (sold-out-walk.ts) */
  soldOutTo = 0;
  /** a draw's epoch whose line this process saw written (its steps are done) */
  drawReady = 0;

  /** A new sale (a reseed): what was learnt of the previous one's line is void. */
  newSale(epoch: number): void {
    this.epoch = epoch;
    this.sleep = undefined;
    this.wantUnits = false;
    this.waiting = false;
    this.lastWorkAt = 0;
    this.fullReadAt = 0;
    this.soldOutTo = 0;
  }

  /** This process took the lease: a new hold starts awake and announces at its first tick. */
  took(lease: HeldLock): void {
    this.held = lease;
    this.myFence = lease.fence;
    this.lastWorkAt = 0;
    this.announcedAt = 0;
  }
}

/**
 * How long until a room let go asleep is looked at anyway (0: never: a join wakes it, and the
 * joining process acts on its own wake). A seat's end, or an admission's lead (its shopper told
 * it is about to end), is exact (asleep on a join too: an admission that ends unused is counted
 * abandoned and leaves the active gauge at that tick); the rest is the slow look for a lost
 * notice (a return, a freed seat, a resume), which a room with nobody in line does not need.
 * @param wakeInMs - the tick's wake: the first admission's end, or the next one's lead (0: none)
 */
export function lookIn(sleep: RoomSleep, recheckMs: number, wakeInMs: number): number {
  if (sleep === 'join') return wakeInMs;
  return wakeInMs > 0 ? Math.min(wakeInMs, recheckMs) : recheckMs;
}

/** A tick's sleep that lets the lease go. */
export const letsGo = (sleep: TickSleep): sleep is RoomSleep | 'opening' =>
  sleep !== '' && sleep !== 'units';
