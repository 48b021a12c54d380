/**
 * An operator's controls of a drop that keep its sale epoch, its line and every shopper's
 * purchases: pause and resume, end now, the room's pace, and units put on sale or taken off.
 * One control at a time per product (the lock `drop:<product>`, this project's lock). Each writes
 * the segments first where a purchase could slip through otherwise, then the meta, then tells
 * every process (`changed`: they read the meta again, keeping what they heard of the line):
 *
 * - pause: every segment's start moved to the paused mark (records/segment-state.ts): every
 *   deduct answers "not started", read as paused; then meta `paused`. Resume puts the sale's own
 *   start back on every segment, then clears `paused`. Both write every segment even when the
 *   meta says there is nothing to change, so a second try repairs a first one cut off midway.
 * - end now: every segment's end set to Redis's now (and its start put back, if paused), then the
 *   meta's; unpaid orders keep their payment window (PostgreSQL's, untouched).
 * - units: each segment's share under that segment's lock (lua/dropUnits-1.lua, fenced as a
 *   deduct is); taking never goes below a segment's stock, so no sold unit is taken back.
 *
 * Every write is a script flagged allow-oom (protocol.ts), the locks' too: on a Redis past its
 * maxmemory the brake still works. Durable mode: each is answered once the replicas hold what it
 * wrote (DropStore.confirmed).
 */
import type { LockClient } from '../../lock/index.js';
import type { Catalogue } from '../catalogue/catalogue.js';
import { splitStock } from '../layout.js';
import type { ProductMeta } from '../records/product-meta.js';
import { PAUSED_STARTS_AT } from '../records/segment-state.js';
import { DropRefusal } from './refusal.js';
import type { DropStore, MetaChange } from './protocol.js';

/** How long a control waits for another one on the same product to finish. */
const CONTROL_WAIT_MS = 5_000;
/** How long a change of units waits for each segment's lock (a deduct holds it for a moment). */
const SEGMENT_WAIT_MS = 2_000;

export interface DropChange {
  productId: string;
  epoch: number;
  /** false when the product already was so (a second pause; its segments are written again) */
  changed: boolean;
}

export interface UnitsChange extends DropChange {
  /** what was asked: > 0 put on sale, < 0 taken off */
  asked: number;
  /** what was done: a withdrawal may take less when units sold meanwhile */
  units: number;
}

export interface DropDeps {
  store: DropStore;
  locks: LockClient;
  catalogue: Catalogue;
}

export class DropControls {
  constructor(private readonly deps: DropDeps) {}

  /**
   * Every segment, then the meta, even when the meta already says paused: a pause cut off midway
   * (a store that stopped answering, a process that died) is finished by the next one.
   */
  pause(productId: string): Promise<DropChange> {
    return this.exclusive(productId, async (meta) => {
      await this.eachSegment(productId, meta, { startsAt: PAUSED_STARTS_AT });
      if (!meta.paused) await this.setMeta(productId, meta, { paused: true });
      return { ...(await this.announced(productId, meta)), changed: !meta.paused };
    });
  }

  /** Every segment's own start back, even under an unpaused meta: undoes a pause cut off midway. */
  resume(productId: string): Promise<DropChange> {
    return this.exclusive(productId, async (meta) => {
      await this.eachSegment(productId, meta, { startsAt: meta.startsAt });
      if (meta.paused) await this.setMeta(productId, meta, { paused: false });
      return { ...(await this.announced(productId, meta)), changed: meta.paused };
    });
  }

  /** Ends the sale now (Redis's clock): `ended` to everyone, the line included. */
  end(productId: string): Promise<DropChange & { endsAt: number }> {
    return this.exclusive(productId, async (meta) => {
      const now = await this.deps.store.now();
      await this.eachSegment(productId, meta, {
        endsAt: now,
        ...(meta.paused && { startsAt: meta.startsAt }),
      });
      await this.setMeta(productId, meta, { endsAt: now, paused: false });
      return { ...(await this.announced(productId, meta)), endsAt: now };
    });
  }

  /** The room's pace and bound on admitted shoppers, from its next tick on. */
  pace(
    productId: string,
    to: { admitPerSecond?: number | undefined; maxActive?: number | undefined },
  ): Promise<DropChange & { waitingRoom: NonNullable<ProductMeta['waitingRoom']> }> {
    return this.exclusive(productId, async (meta) => {
      const room = meta.waitingRoom;
      if (!room) {
        throw new DropRefusal('no-waiting-room', `"${productId}" is sold without a waiting room`);
      }
      const next = {
        ...room,
        ...(to.admitPerSecond !== undefined && { admitPerSecond: to.admitPerSecond }),
        ...(to.maxActive !== undefined && { maxActive: to.maxActive }),
      };
      await this.setMeta(productId, meta, { waitingRoom: next });
      return { ...(await this.announced(productId, meta)), waitingRoom: next };
    });
  }

  /**
   * Puts `units` on sale (> 0), spread over the segments as a seed spreads them, or takes up to
   * `-units` unsold ones off (< 0), from the segments holding most first.
   * @throws DropRefusal `not-enough-units` when fewer than asked are unsold
   */
  units(productId: string, units: number): Promise<UnitsChange> {
    return this.exclusive(productId, async (meta) => {
      const plan =
        units > 0 ? splitStock(units, meta.segments) : await this.takePlan(productId, meta, -units);
      let done = 0;
      const refilled: number[] = [];
      for (let seg = 0; seg < plan.length; seg++) {
        const want = plan[seg]!;
        if (want === 0) continue;
        const changed = await this.unitsOn(productId, meta, seg, units > 0 ? want : -want);
        done += changed;
        if (changed > 0) refilled.push(seg);
      }
      // units back on an empty (maybe sold-out) sale: every process and the line hear it
      for (const seg of refilled)
        await this.deps.catalogue.announceRestock(productId, meta.epoch, seg);
      return { ...(await this.announced(productId, meta)), asked: units, units: done };
    });
  }

  /** How many to take off each segment: the fullest first, never more than its stock. */
  private async takePlan(productId: string, meta: ProductMeta, want: number): Promise<number[]> {
    const state = await this.deps.store.stock(productId);
    if (!state || state.epoch !== meta.epoch) throw reseeded(productId);
    if (state.segments.some((s) => s.unreachable)) {
      throw new DropRefusal(
        'segments-unreachable',
        'a Redis shard holding some segments is not answering: try again',
      );
    }
    if (state.remaining < want) {
      throw new DropRefusal(
        'not-enough-units',
        `only ${state.remaining} units of "${productId}" are unsold: ${want} cannot be taken off (sold units never are)`,
      );
    }
    const plan = new Array<number>(meta.segments).fill(0);
    let left = want;
    for (const s of [...state.segments].sort((a, b) => b.stock - a.stock)) {
      const take = Math.min(s.stock, left);
      plan[s.segment] = take;
      left -= take;
      if (left === 0) break;
    }
    return plan;
  }

  /** One segment's change of units, under its lock. */
  private async unitsOn(
    productId: string,
    meta: ProductMeta,
    seg: number,
    units: number,
  ): Promise<number> {
    const { locks, store } = this.deps;
    const held = await locks.acquire(store.segmentLock(productId, seg), {
      waitMs: SEGMENT_WAIT_MS,
      leaseMs: SEGMENT_WAIT_MS,
    });
    if (!held) {
      throw new DropRefusal(
        'segment-busy',
        `segment ${seg} of "${productId}" stayed locked: try again`,
      );
    }
    try {
      const r = await store.changeUnits(productId, seg, meta.epoch, units, held.fence);
      if (r.code === 'stale-epoch') throw reseeded(productId);
      if (r.code === 'stale-fence') {
        throw new DropRefusal(
          'segment-busy',
          `segment ${seg}'s lock passed to another holder: try again`,
        );
      }
      return r.units;
    } finally {
      await held.release().catch(() => undefined);
    }
  }

  private async eachSegment(
    productId: string,
    meta: ProductMeta,
    window: { startsAt?: number; endsAt?: number },
  ): Promise<void> {
    for (let seg = 0; seg < meta.segments; seg++) {
      const r = await this.deps.store.setWindow(productId, seg, meta.epoch, window);
      if (r.code === 'stale-epoch') throw reseeded(productId);
    }
  }

  private async setMeta(productId: string, meta: ProductMeta, change: MetaChange): Promise<void> {
    const r = await this.deps.store.setMeta(productId, meta.epoch, change);
    if (r.code === 'stale-epoch') throw reseeded(productId);
  }

  private async announced(productId: string, meta: ProductMeta): Promise<DropChange> {
    await this.deps.catalogue.announceChange(productId, meta.epoch);
    // heard first: a change that stands on the masters is acted on even if its replicas lag
    await this.deps.store.confirmed(productId, meta.segments);
    return { productId, epoch: meta.epoch, changed: true };
  }

  /**
   * Runs `control` holding the product's control lock, on its meta as it stands.
   * @throws DropRefusal unknown product, an ended sale, or another control that did not finish
   */
  private async exclusive<T>(
    productId: string,
    control: (meta: ProductMeta) => Promise<T>,
  ): Promise<T> {
    const held = await this.deps.locks.acquire(`drop:${productId}`, { waitMs: CONTROL_WAIT_MS });
    if (!held) {
      throw new DropRefusal(
        'control-busy',
        `another control of "${productId}" is still running: try again`,
      );
    }
    try {
      const meta = await this.deps.store.meta(productId);
      if (!meta) throw new DropRefusal('unknown-product', `no product "${productId}"`);
      const now = await this.deps.store.now();
      if (meta.endsAt > 0 && now >= meta.endsAt) {
        throw new DropRefusal(
          'sale-over',
          `the sale of "${productId}" ended at ${new Date(meta.endsAt).toISOString()}: nothing to change (seed a new one)`,
        );
      }
      return await control(meta);
    } finally {
      await held.release().catch(() => undefined);
    }
  }
}

const reseeded = (productId: string) =>
  new DropRefusal('reseeded', `"${productId}" was reseeded meanwhile: look again`);
