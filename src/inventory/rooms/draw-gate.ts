/**
 * A room whose product is sold by a draw has no line until the draw is drawn: before its close
 * nothing, then its steps (inventory/draw/phase.ts) under the room's lease, each a function of
 * what is stored, until its line is written; from then on it is a room as any.
 */
import type { HeldLock } from '../../lock/index.js';
import type { ProductView } from '../catalogue/catalogue.js';
import type { RoomPlan } from './room-plan.js';

/** A draw's steps before its line exists: the close, the freeze, the beacon, the line's parts. */
export interface DrawSteps {
  prepare(
    view: ProductView,
    fence: number,
  ): Promise<{ ready: true } | { ready: false; at: number }>;
  /** before a tick: the line written ahead of the admitter */
  feed(view: ProductView, fence: number): Promise<void>;
}

/**
 * Whether the room ticks on (no draw, or the draw's line is written); otherwise the plan says when to look
 * again (its close, the beacon round's time, a retry) and the lease is let go meanwhile.
 */
export async function passDrawGate(
  steps: DrawSteps | undefined,
  view: ProductView,
  plan: RoomPlan,
  room: { lease: () => Promise<HeldLock | undefined>; release: () => Promise<void> },
): Promise<boolean> {
  if (!view.draw || !steps || plan.drawReady === view.epoch) return true;
  if (!plan.held && Date.now() < view.draw!.entriesCloseAt) {
    plan.dueAt = view.draw!.entriesCloseAt;
    return false;
  }
  const held = await room.lease();
  if (!held) return false;
  const step = await steps.prepare(view, held.fence);
  if (!step.ready) {
    await room.release();
    plan.dueAt = step.at;
    return false;
  }
  plan.drawReady = view.epoch;
  return true;
}
