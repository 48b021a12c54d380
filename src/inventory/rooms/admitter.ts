/**
 * The waiting rooms' admitters. Every API process runs this loop; for each room, exactly one
 * process admits at a time: the one holding the room's lock (this project's lock, a watchdog
 * lease of `leaseMs`), whose fencing token the admit script checks, so a holder that paused past
 * its lease cannot admit after a newer one has. A holder killed: its lease runs out and another
 * process's next try takes the room over. Nothing of the line lives in the admitter (pace, served
 * counter and places are in Redis), so nobody's place changes with the holder.
 */
import { randomInt } from 'node:crypto';
import type { HeldLock, LockClient } from '../../lock/index.js';
import type { Logger } from '../../log.js';
import { inBackground } from '../../redis/background.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import type { AdmitTick, RoomStore } from './store.js';

/** How often the list of rooms is read again (a room seeded meanwhile waits this long at most). */
const ROOMS_REFRESH_MS = 2_000;
/** A waiting process hears the served counter at least this often, admissions or not. */
const ANNOUNCE_EVERY_MS = 1_000;

export interface RoomAdmitterOptions {
  catalogue: Catalogue;
  store: RoomStore;
  /** a lock client whose watchdog lease is the room's takeover time (closed by stop()) */
  locks: LockClient;
  tickMs: number;
  /** the lobby's shuffle seed (tests); unset: a random one at each opening */
  shuffleSeed?: number | undefined;
  /** lobby places one admit call shuffles (tests: small, to cross call boundaries) */
  shuffleSteps?: number | undefined;
  logger?: Logger | undefined;
  /** each tick's outcome, for the metrics */
  onTick?: (view: ProductView, tick: AdmitTick & { code: 'ticked' }) => void;
}

export class RoomAdmitter {
  private readonly held = new Map<string, HeldLock>();
  private readonly announced = new Map<string, number>();
  private rooms: string[] = [];
  private roomsReadAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: RoomAdmitterOptions) {}

  start(): void {
    const loop = () => {
      if (this.stopped) return;
      // a loop of its own: its commands are no request's (background.ts)
      this.running = inBackground('room admitter', () => this.tick())
        .catch((err: unknown) => this.opts.logger?.warn({ err }, 'room admitter tick failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(loop, this.opts.tickMs);
        });
    };
    this.timer = setTimeout(loop, 0);
  }

  /** Rooms this process admits for now (tests, metrics). */
  get holding(): string[] {
    return [...this.held.keys()];
  }

  /** One pass over every room: take the free ones' leases, admit for the held ones. */
  async tick(): Promise<void> {
    const now = Date.now();
    if (now - this.roomsReadAt >= ROOMS_REFRESH_MS) {
      this.rooms = await this.opts.store.rooms();
      this.roomsReadAt = now;
    }
    await Promise.all(this.rooms.map((id) => this.tickRoom(id)));
  }

  private async tickRoom(productId: string): Promise<void> {
    const view = await this.opts.catalogue.get(productId);
    if (!view?.room || (view.endsAt > 0 && Date.now() >= view.endsAt)) {
      await this.drop(productId);
      return;
    }
    let held = this.held.get(productId);
    if (held?.signal.aborted) {
      this.held.delete(productId);
      held = undefined;
    }
    if (!held) {
      const got = await this.opts.locks.acquire(`room:${productId}`, { waitMs: 0 });
      if (!got) return;
      if (this.stopped) return void (await got.release().catch(() => undefined));
      held = got;
      this.held.set(productId, held);
      this.opts.logger?.info({ product: productId, fence: held.fence }, 'room admitter took over');
    }
    // before the units: a purchase whose seat is freed after this read counts as a seat taken
    const doneAtRead = await this.opts.store.doneCount(productId, view.epoch);
    const { units, known } = await this.unitsLeft(view);
    const last = this.announced.get(productId) ?? 0;
    const announce = Date.now() - last >= ANNOUNCE_EVERY_MS;
    const lease = held;
    const admit = () =>
      this.opts.store.admit(
        productId,
        {
          epoch: view.epoch,
          fence: lease.fence,
          startsAt: view.startsAt,
          endsAt: view.endsAt,
          seed: this.opts.shuffleSeed ?? randomInt(1, 2_147_483_646),
          settings: view.room!.settings,
          // sold out, or paused by an operator: nobody is admitted (seats still run out)
          soldOut: view.soldOut || view.soldOutMarked || (known && units === 0) || view.paused,
          unitsLeft: units,
          limitPerUser: view.limitPerUser,
          shuffleSteps: this.opts.shuffleSteps,
          doneAtRead,
        },
        announce,
      );
    let tick = await admit();
    // the opening's shuffle goes on call after call (each one bounded, the shard serving others
    // in between) while this process holds the lease; the next tick resumes it if the lease went
    while (
      tick.code === 'ticked' &&
      tick.shuffleLeft > 0 &&
      !lease.signal.aborted &&
      !this.stopped
    ) {
      tick = await admit();
    }
    if (tick.code === 'fenced') {
      await this.drop(productId);
      return;
    }
    if (announce) this.announced.set(productId, Date.now());
    this.opts.onTick?.(view, tick);
  }

  /**
   * The units left, read from the segments (the holder's one pipeline per tick): admission is
   * bounded by them, and the segments found empty are announced as a purchase would, so a room
   * nobody buys from any more still learns, and tells every process, that it is sold out; and a
   * segment found holding units that the view has empty (or sold out) is announced back, so a
   * lost restock notice does not stop the line until the next return.
   * A shard that did not answer counts for none of its units: nobody can buy them while it is
   * away (its shoppers are failed fast), and admitting on them would admit a batch that finds
   * nothing. Not known: then
   * the room is not sold out for it.
   */
  private async unitsLeft(view: ProductView): Promise<{ units: number; known: boolean }> {
    const runOuts = view.runOuts;
    const state = await this.opts.store.stock(view.id);
    if (!state || state.epoch !== view.epoch) return { units: 0, known: false };
    for (const s of state.segments) {
      if (s.unreachable) continue;
      if (s.stock === 0) this.opts.catalogue.noteEmpty(view, s.segment);
      else this.opts.catalogue.noteStocked(view, s.segment, runOuts);
    }
    return admissionUnits(state.segments);
  }

  private async drop(productId: string): Promise<void> {
    const held = this.held.get(productId);
    if (!held) return;
    this.held.delete(productId);
    await held.release().catch(() => undefined);
  }

  /**
   * Stops admitting. `release` false leaves the leases to run out, as a killed process would
   * (tests of the takeover); true hands the rooms over at once (a clean shutdown).
   */
  async stop(opts: { release: boolean } = { release: true }): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (opts.release) await Promise.all([...this.held.keys()].map((id) => this.drop(id)));
    else this.held.clear();
    await this.opts.locks.close();
  }
}

/** The units admission may count on: those of the segments that answered (see unitsLeft). */
export function admissionUnits(segments: readonly { stock: number; unreachable?: true }[]): {
  units: number;
  known: boolean;
} {
  let units = 0;
  for (const s of segments) if (!s.unreachable) units += s.stock;
  return { units, known: !segments.some((s) => s.unreachable) };
}
