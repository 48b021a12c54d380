/**
 * The waiting rooms' admitters. Every API process runs one; for each room, exactly one process
 * admits at a time: the one holding the room's lock (this project's lock, a watchdog lease of the
 * lock client's timeout), whose fencing token the admit script checks, so a holder that paused
 * past its lease cannot admit after a newer one has. Nothing of the line lives in the admitter
 * (pace, served counter and places are in Redis), so nobody's place changes with the holder.
 *
 * A room costs Redis only while it has work (docs/waiting-room.md#what-it-costs-redis): a plan
 * per room (room-plan.ts), a timer at the opening, ticks at the pace while shoppers wait, then
 * sleep (the lease let go) until a join or freed seat (the acting process wakes it and tells the
 * others), a return, resume or change (the catalogue's notices), or a timer (a seat's end, the
 * slow look for a lost notice). A process finding the lease held looks again when it could have
 * run out: a dead holder is taken over within a lease, without a command per room per tick.
 */
import type { HeldLock, LockClient } from '../../lock/index.js';
import type { Logger } from '../../log.js';
import { inBackground } from '../../redis/background.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import type { RoomNotice } from '../catalogue/room-notices.js';
import { passDrawGate, type DrawSteps } from './draw-gate.js';
import { holderTick, momentsOf, type HolderTickDeps, type RoomMoments } from './holder-tick.js';
import { letsGo, lookIn, RoomPlan } from './room-plan.js';
import type { AdmitTick, RoomStore } from './store.js';
export { admissionUnits, type RoomMoments } from './holder-tick.js';

/** How often the list of rooms is read again (a room seeded meanwhile waits this long at most). */
const ROOMS_REFRESH_MS = 2_000;
const MAX_TIMER_MS = 2_147_483_647; // setTimeout's ceiling: a later time is waited for in steps

export interface RoomAdmitterOptions extends Pick<HolderTickDeps, 'onSoldOut'> {
  catalogue: Catalogue;
  store: RoomStore;
  /** a lock client whose watchdog lease is the room's takeover time (closed by stop()) */
  locks: LockClient;
  tickMs: number;
  /** a room asleep with people in line is looked at after this anyway (a notice may be lost) */
  recheckMs: number;
  /** the lobby's shuffle seed (tests); unset: a random one at each opening */
  shuffleSeed?: number | undefined;
  /** lobby places one admit call shuffles (tests: small, to cross call boundaries) */
  shuffleSteps?: number | undefined;
  logger?: Logger | undefined;
  /** admissions ending within this many ms are named once in a tick's moments (0: never) */
  expiringLeadMs?: number | undefined;
  /** each tick's outcome, for the metrics */
  onTick?: (view: ProductView, tick: AdmitTick & { code: 'ticked' }) => void;
  /** whom a tick admitted, passed over or warned (holder-tick.ts): their notices, once a tick */
  onMoments?: (view: ProductView, moments: RoomMoments) => void;
  /** another process ticks the room under a newer lease: this one's gauges of it are stale */
  onSuperseded?: (productId: string) => void;
  /** the draws' steps: a product sold by a draw has its line only once drawn */
  draws?: DrawSteps | undefined;
}

type Ticked = AdmitTick & { code: 'ticked' };

export class RoomAdmitter {
  private readonly plans = new Map<string, RoomPlan>();
  private readonly leaseMs: number;
  private readonly tickDeps: HolderTickDeps;
  private refreshTimer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private unlisten: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly opts: RoomAdmitterOptions) {
    this.leaseMs = opts.locks.settings.watchdogTimeoutMs;
    this.tickDeps = { ...opts, stopped: () => this.stopped };
  }

  start(): void {
    this.unlisten = this.opts.catalogue.roomNotices.listen((id, n) => this.heard(id, n));
    const refresh = () => {
      if (this.stopped) return;
      this.refreshing = inBackground('room admitter', () => this.refresh())
        .catch((err: unknown) => this.opts.logger?.warn({ err }, 'reading the rooms failed'))
        .finally(() => {
          if (!this.stopped) this.refreshTimer = setTimeout(refresh, ROOMS_REFRESH_MS);
        });
    };
    this.refreshTimer = setTimeout(refresh, 0);
  }

  /** Rooms this process admits for now (tests, metrics). */
  get holding(): string[] {
    return [...this.plans].filter(([, p]) => p.held && !p.held.signal.aborted).map(([id]) => id);
  }

  /**
   * When this process next acts for the room, not holding it (local ms; Infinity: when a notice
   * says so); undefined while it holds the room, acts for it, or does not know it (tests).
   */
  plannedAt(productId: string): number | undefined {
    const plan = this.plans.get(productId);
    return plan && !plan.held && !plan.acting ? plan.dueAt : undefined;
  }

  /** Whether this process's latest hold of the room is the newest it heard of (tests). */
  heldLast(productId: string): boolean {
    const plan = this.plans.get(productId);
    return !!plan && plan.myFence > 0 && plan.myFence >= plan.heardFence;
  }

  /** Reads the rooms, acts for every room due, and waits for those actions (tests). */
  async tick(): Promise<void> {
    await inBackground('room admitter', () => this.refresh());
    const now = Date.now();
    for (const [id, plan] of this.plans) if (plan.dueAt <= now) this.act(id, plan);
    await Promise.all([...this.plans.values()].map((p) => p.acting));
  }

  /**
   * A shopper polls a place past the served counter in a room heard asleep on a join: the wake of
   * their join was lost (its process died before sending it). Looked at, at most once a recheck.
   */
  nudge(productId: string): void {
    const plan = this.plans.get(productId);
    const now = Date.now();
    if (!plan || this.stopped || plan.held || now - plan.nudgedAt < this.opts.recheckMs) return;
    plan.nudgedAt = now;
    this.wake(productId, plan);
  }

  private async refresh(): Promise<void> {
    const ids = await this.opts.store.rooms();
    const listed = new Set(ids);
    for (const [id, plan] of this.plans) if (!listed.has(id)) this.retire(id, plan);
    // a room new to this process is looked at once: its view says whether it opened yet
    for (const id of ids) if (!this.plans.has(id) && !this.stopped) this.due(id, this.plan(id), 0);
  }

  private plan(id: string): RoomPlan {
    const plan = new RoomPlan();
    this.plans.set(id, plan);
    return plan;
  }

  private retire(id: string, plan: RoomPlan): void {
    clearTimeout(plan.timer);
    this.plans.delete(id);
    void Promise.resolve(plan.acting).then(() => this.release(plan));
  }

  /** Plans the room's next action at `at` (Infinity: none until a notice). */
  private due(id: string, plan: RoomPlan, at: number): void {
    plan.dueAt = at;
    clearTimeout(plan.timer);
    plan.timer = undefined;
    if (this.stopped || plan.acting || at === Infinity || this.plans.get(id) !== plan) return;
    const wait = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    plan.timer = setTimeout(() => this.act(id, plan), wait);
    plan.timer.unref();
  }

  private wake(id: string, plan: RoomPlan): void {
    plan.wantUnits = true;
    plan.woken = true;
    if (plan.acting) plan.again = true;
    else this.due(id, plan, Date.now());
  }

  private act(id: string, plan: RoomPlan): void {
    clearTimeout(plan.timer);
    plan.timer = undefined;
    if (this.stopped || plan.acting) return;
    // a loop of its own, whoever woke it: its commands are no request's (background.ts)
    plan.acting = inBackground('room admitter', () => this.run(id, plan))
      .catch((err: unknown) => {
        this.opts.logger?.warn({ err, product: id }, 'room admitter tick failed');
        plan.dueAt = Date.now() + (plan.held ? this.opts.tickMs : Math.min(this.leaseMs, 1_000));
      })
      .finally(() => {
        plan.acting = undefined;
        const again = plan.again;
        plan.again = false;
        this.due(id, plan, again ? Date.now() : plan.dueAt);
      });
  }

  private async run(id: string, plan: RoomPlan): Promise<void> {
    const view = await this.opts.catalogue.get(id);
    const now = Date.now();
    if (!view?.room || (view.endsAt > 0 && now >= view.endsAt)) {
      await this.release(plan);
      plan.dueAt = Infinity; // a reseed or a change is a notice
      return;
    }
    if (plan.epoch !== view.epoch) plan.newSale(view.epoch);
    const gate = { lease: () => this.take(id, plan), release: () => this.release(plan) };
    if (!(await passDrawGate(this.opts.draws, view, plan, gate))) return;
    // before its opening a room needs nothing: its first tick at the opening opens it
    if (!plan.held && now < view.startsAt) {
      plan.dueAt = view.startsAt;
      return;
    }
    const lease = await this.take(id, plan);
    if (lease) await this.tickHeld(id, plan, view, lease);
  }

  /** The room's lease: the one held, or a try; held by another, looks again once it could end. */
  private async take(id: string, plan: RoomPlan): Promise<HeldLock | undefined> {
    if (plan.held?.signal.aborted === false) return plan.held;
    plan.held = undefined; // a hold whose lease was lost ended itself
    let busyMs = -1;
    const got = await this.opts.locks.acquire(`room:${id}`, {
      waitMs: 0,
      onBusy: (ms) => (busyMs = ms),
    });
    if (!got) {
      plan.dueAt = Date.now() + (busyMs >= 0 ? Math.max(busyMs, this.opts.tickMs) : this.leaseMs);
      return undefined;
    }
    if (this.stopped) return void (await got.release().catch(() => undefined));
    plan.took(got);
    this.opts.logger?.debug({ product: id, fence: got.fence }, 'room admitter took the room');
    return got;
  }

  private async tickHeld(
    id: string,
    plan: RoomPlan,
    view: ProductView,
    lease: HeldLock,
  ): Promise<void> {
    if (view.draw) await this.opts.draws?.feed(view, lease.fence);
    const tick = await holderTick(this.tickDeps, id, plan, view, lease);
    if (tick.code === 'fenced') {
      await this.release(plan);
      plan.dueAt = Date.now() + this.leaseMs;
      return;
    }
    this.opts.onTick?.(view, tick);
    const moments = momentsOf(tick);
    if (moments) this.opts.onMoments?.(view, moments);
    plan.reported = true;
    plan.woken = false;
    if (tick.admitted > 0) plan.lastWorkAt = Date.now();
    // someone waits and a seat is free: the next tick may admit (a seat freed meanwhile: the
    // script asks for the units)
    plan.waiting = tick.next > tick.served || tick.shuffleLeft > 0;
    plan.wantUnits = plan.waiting && tick.active < view.room!.settings.maxActive;
    await this.settle(id, plan, view, tick, lease);
  }

  /** After a tick: the next one at the pace, or the room let go asleep (or until its opening). */
  private async settle(
    id: string,
    plan: RoomPlan,
    view: ProductView,
    tick: Ticked,
    lease: HeldLock,
  ): Promise<void> {
    const now = Date.now();
    const sleep = tick.sleep;
    if (!letsGo(sleep)) {
      plan.sleep = undefined;
      plan.dueAt = now + this.opts.tickMs;
      return;
    }
    await this.release(plan);
    if (sleep === 'opening') {
      // the process's clock is ahead of Redis's: the opening is Redis's
      plan.dueAt = now + Math.max(this.opts.tickMs, tick.wakeAt - tick.now);
      return;
    }
    plan.sleep = sleep;
    const wakeInMs = tick.wakeAt > 0 ? Math.max(this.opts.tickMs, tick.wakeAt - tick.now) : 0;
    const lookInMs = lookIn(sleep, this.opts.recheckMs, wakeInMs);
    plan.dueAt = lookInMs > 0 ? now + lookInMs : Infinity;
    await this.opts.store
      .asleep(id, {
        epoch: view.epoch,
        served: tick.served,
        at: tick.now,
        fence: lease.fence,
        sleep,
        lookInMs,
      })
      .catch((err: unknown) => this.opts.logger?.warn({ err, product: id }, 'notice failed'));
  }

  /** What this process hears of its rooms (the catalogue's notices, and its own wakes). */
  private heard(productId: string, notice: RoomNotice): void {
    if (this.stopped) return;
    if (notice.kind === 'resync') {
      for (const [id, plan] of this.plans) this.wake(id, plan);
      return;
    }
    const plan = this.plans.get(productId);
    if (!plan) return;
    if (notice.kind === 'admit' || notice.kind === 'asleep') {
      if (notice.fence < plan.heardFence || notice.fence === plan.myFence) return;
      plan.heardFence = notice.fence;
      if (plan.reported && notice.fence > plan.myFence) {
        plan.reported = false;
        this.opts.onSuperseded?.(productId);
      }
      if (notice.kind === 'admit') {
        // awake, its holder alive: looked at once that holder could be dead (a lease without
        // its notices), not a lease attempt a tick
        plan.sleep = undefined;
        plan.woken = false;
        if (!plan.held && !plan.acting) this.due(productId, plan, Date.now() + this.leaseMs);
        return;
      }
      plan.sleep = notice.sleep;
      // a wake not yet seen handled stands: this notice may be of a tick before it
      if (plan.held || plan.acting || plan.woken) return;
      // its holder looks again then; this process only if that holder did not (it died)
      const at = notice.lookInMs > 0 ? Date.now() + notice.lookInMs + this.leaseMs : Infinity;
      this.due(productId, plan, at);
      return;
    }
    // nobody waits in a room asleep on a join: a return changes nothing there
    if (notice.kind === 'restock' && plan.sleep === 'join') return;
    if (notice.kind === 'reseed') plan.newSale(0);
    this.wake(productId, plan);
  }

  private async release(plan: RoomPlan): Promise<void> {
    const held = plan.held;
    plan.held = undefined;
    await held?.release().catch(() => undefined);
  }

  /**
   * Stops admitting. `release` false leaves the leases to run out, as a killed process would
   * (tests of the takeover); true hands the rooms over at once (a clean shutdown): the rooms it
   * held are woken for the other processes.
   */
  async stop(opts: { release: boolean } = { release: true }): Promise<void> {
    this.stopped = true;
    this.unlisten?.();
    clearTimeout(this.refreshTimer);
    for (const plan of this.plans.values()) clearTimeout(plan.timer);
    await this.refreshing;
    await Promise.all([...this.plans.values()].map((p) => p.acting));
    const held = [...this.plans].filter(([, p]) => p.held);
    if (opts.release) {
      await Promise.all(
        held.map(async ([id, plan]) => {
          await this.release(plan);
          this.opts.store.wake(id, plan.epoch, 'handover');
        }),
      );
    } else for (const [, plan] of held) plan.held = undefined;
    await this.opts.locks.close();
  }
}
