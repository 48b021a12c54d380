/**
 * One tick of a room by the process that holds its lease: the units left read only when the tick
 * may admit someone (someone waits and a seat is free, or a wake), of the segments not known
 * empty, with every segment now and then while someone waits; then the admit script, called
 * again while the opening's shuffle goes on, or once more with the units when it finds shoppers
 * it could admit without having been given them.
 */
import { randomInt } from 'node:crypto';
import type { HeldLock } from '../../lock/index.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import { UNITS_NOT_READ } from './protocol.js';
import { IDLE_AFTER_MS, type RoomPlan } from './room-plan.js';
import { tellSoldOut, type SoldOutWalkDeps } from './sold-out-walk.js';
import type { AdmitTick, RoomStore } from './store.js';

/** A waiting process hears the served counter at least this often while the room is awake. */
const ANNOUNCE_EVERY_MS = 1_000;

export interface HolderTickDeps extends Pick<SoldOutWalkDeps, 'onSoldOut' | 'soldOutBatch'> {
  catalogue: Pick<Catalogue, 'noteEmpty' | 'noteStocked'>;
  store: Pick<RoomStore, 'admit' | 'doneCount' | 'units' | 'soldOutBatch'>;
  /** every segment is read at most this often (a restock notice lost heals) */
  recheckMs: number;
  shuffleSeed?: number | undefined;
  shuffleSteps?: number | undefined;
  /** admissions ending within this many ms are named once (0: never) */
  expiringLeadMs?: number | undefined;
  /** the admitter stops: the shuffle's calls stop (the next holder resumes it) */
  stopped(): boolean;
}

/**
 * The room's tick, as many admit calls as it takes (see the module's comment); then, sold out for
 * good, the shoppers still waiting are told (sold-out-walk.ts).
 */
export async function holderTick(
  deps: HolderTickDeps,
  id: string,
  plan: RoomPlan,
  view: ProductView,
  lease: HeldLock,
): Promise<AdmitTick> {
  const tick = await admitCalls(deps, id, plan, view, lease);
  if (tick.code === 'ticked') await tellSoldOut(deps, plan, view, tick, lease);
  return tick;
}

async function admitCalls(
  deps: HolderTickDeps,
  id: string,
  plan: RoomPlan,
  view: ProductView,
  lease: HeldLock,
): Promise<AdmitTick> {
  let readUnits = plan.wantUnits;
  // the shoppers each call names: the tick's moments are every call's
  const moments = {
    admittedUsers: [] as string[],
    passedUsers: [] as string[],
    expiringUsers: [] as Array<{ userId: string; endsAt: number }>,
  };
  const call = async () => {
    const t = await admitOnce(deps, id, plan, view, lease, readUnits);
    if (t.code !== 'ticked') return t;
    moments.admittedUsers.push(...t.admittedUsers);
    moments.passedUsers.push(...t.passedUsers);
    moments.expiringUsers.push(...t.expiringUsers);
    return { ...t, ...moments };
  };
  let tick = await call();
  for (;;) {
    // the opening's shuffle goes on call after call (each one bounded, the shard serving others
    // in between) while this process holds the lease; the next tick resumes it if the lease went
    while (tick.code === 'ticked' && tick.shuffleLeft > 0 && !lease.signal.aborted) {
      if (deps.stopped()) break;
      tick = await call();
    }
    // shoppers to admit, and the units left were not read (nobody waited at the last tick)
    if (tick.code !== 'ticked' || tick.sleep !== 'units' || readUnits) return tick;
    readUnits = true;
    tick = await call();
  }
}

async function admitOnce(
  deps: HolderTickDeps,
  id: string,
  plan: RoomPlan,
  view: ProductView,
  lease: HeldLock,
  readUnits: boolean,
): Promise<AdmitTick> {
  const now = Date.now();
  // sold out, or paused by an operator: nobody is admitted (seats still run out)
  const blocked = () => view.soldOut || view.soldOutMarked || view.paused;
  // now and then every segment, those known empty too, while someone waits (a lost restock)
  const fullRead = (readUnits || plan.waiting) && now - plan.fullReadAt >= deps.recheckMs;
  let units: { units: number; known: boolean } | undefined;
  let doneAtRead = 0;
  if (fullRead || (readUnits && !blocked())) {
    // before the units: a purchase whose seat is freed after this read counts as a seat taken
    doneAtRead = await deps.store.doneCount(id, view.epoch);
    units = await unitsLeft(deps, view, fullRead);
    if (fullRead) plan.fullReadAt = now;
  }
  const announce = now - plan.announcedAt >= ANNOUNCE_EVERY_MS;
  const tick = await deps.store.admit(
    id,
    {
      epoch: view.epoch,
      fence: lease.fence,
      startsAt: view.startsAt,
      endsAt: view.endsAt,
      seed: deps.shuffleSeed ?? randomInt(1, 2_147_483_646),
      settings: view.room!.settings,
      soldOut: blocked() || (units?.known === true && units.units === 0),
      unitsLeft: units ? units.units : UNITS_NOT_READ,
      limitPerUser: view.limitPerUser,
      shuffleSteps: deps.shuffleSteps,
      doneAtRead,
      mayIdle: now - plan.lastWorkAt >= IDLE_AFTER_MS,
      expiringLeadMs: deps.expiringLeadMs,
    },
    announce,
  );
  if (announce && tick.code === 'ticked') plan.announcedAt = now;
  return tick;
}

/**
 * The units left, read from the segments not known empty (every one at a full read: a segment
 * the view has empty that holds units again is a restock notice lost): admission is bounded by
 * them, and the segments found empty are announced as a purchase would, so a room nobody buys
 * from any more still learns, and tells every process, that it is sold out; a segment found
 * holding units that the view has empty (or sold out) is announced back, so a lost restock
 * notice does not stop the line until the next return.
 * A shard that did not answer counts for none of its units: nobody can buy them while it is
 * away (its shoppers are failed fast), and admitting on them would admit a batch that finds
 * nothing. Not known: then the room is not sold out for it.
 */
async function unitsLeft(
  deps: HolderTickDeps,
  view: ProductView,
  every: boolean,
): Promise<{ units: number; known: boolean }> {
  const runOuts = view.runOuts;
  const segments = Array.from({ length: view.segments }, (_, i) => i).filter(
    (i) => every || !view.empty.has(i),
  );
  if (segments.length === 0) return { units: 0, known: true };
  const state = await deps.store.units(view.id, view.epoch, segments);
  if (!state) return { units: 0, known: false };
  for (const s of state) {
    if (s.unreachable) continue;
    if (s.stock === 0) deps.catalogue.noteEmpty(view, s.segment);
    else deps.catalogue.noteStocked(view, s.segment, runOuts);
  }
  return admissionUnits(state);
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

/** What a tick did to whom, for their notices (times in Redis ms). */
export interface RoomMoments {
  at: number;
  /** admitted at `at`, until `at` + admittedForSeconds */
  admitted: string[];
  /** their admission ran out unused (a purchase ends it: a buyer is never passed over) */
  passed: string[];
  /** their admission ends within the lead (ROOM_EXPIRING_LEAD_S), at `endsAt` */
  expiring: Array<{ userId: string; endsAt: number }>;
}

/** A tick's moments; undefined when it named nobody. */
export function momentsOf(tick: AdmitTick & { code: 'ticked' }): RoomMoments | undefined {
  if (!tick.admittedUsers.length && !tick.passedUsers.length && !tick.expiringUsers.length) {
    return undefined;
  }
  return {
    at: tick.now,
    admitted: tick.admittedUsers,
    passed: tick.passedUsers,
    expiring: tick.expiringUsers,
  };
}
