/**
 * A purchase's spill: its home segment could not serve, so a claim stands in for the shopper's
 * marker there while the units are taken from another segment; the claim is finalised once one
 * sells, or released when none can. Skips busy locks first, then waits on them in turn.
 */
import { shardDown } from '../../outages.js';
import type { RedisClient } from '../../redis/connection.js';
import type { SegmentKeys } from '../../redis/keys.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import type { ShardHealth } from '../../redis/shard-health.js';
import type { Logger } from '../../log.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import type { SaleRefusal } from '../errors.js';
import { spillOrder } from '../layout.js';
import { claimSettle, type DeductReply } from '../protocol.js';
import { soldOrder, type SoldOrder } from '../records/outbox-entry.js';
import type { ActivityLeases, PurchaseDeductArgs as DeductArgs } from './activity-leases.js';
import { refusalOf, shardUnavailable, soldOutRefusal as soldOut, STALE } from './refusals.js';
import type { SegmentLocking } from './segment-locking.js';

/**
 * Busy segment locks a spill tries before it waits for one of them. Each probe is a round trip;
 * when every lock is busy (overload), probing all N would turn one purchase into N calls.
 */
const MAX_BUSY_PROBES = 3;

/** What a deduct on any segment of a sale needs (the sale's own parts). */
export interface SegmentParts {
  redis: RedisClient;
  catalogue: Catalogue;
  locking: SegmentLocking;
  leases: ActivityLeases;
  shards: ShardHealth;
  /** How long to wait for a segment lock in Redis before trying elsewhere. */
  lockWaitMs: number;
  replicaWait?: ReplicaWait | undefined;
  logger?: Logger | undefined;
  /** the keys of a product's segment (cached) */
  segment(view: { id: string }, seg: number): SegmentKeys;
}

/**
 * What a failed command on segment `seg` becomes: one refused unsent sold nothing (a refusal);
 * undefined for any other failure (it may have sold).
 */
export function failedOn(
  parts: SegmentParts,
  view: ProductView,
  seg: number,
  err: unknown,
): SaleRefusal | undefined {
  parts.shards.failed(parts.segment(view, seg).state, err);
  const down = shardDown(err);
  return down ? shardUnavailable(view.id, seg, down) : undefined;
}

/** The order sold by a deduct on segment `seg`. */
export function soldOrderOf(
  view: ProductView,
  args: DeductArgs,
  seg: number,
  outboxId: string,
): SoldOrder {
  const { orderId, productId, userId, quantity, epoch, homeSegment } = args;
  const order = { orderId, productId, userId, quantity, epoch, homeSegment, outboxId };
  return soldOrder({ ...order, segment: seg, payWithinSeconds: view.payWithinSeconds });
}

/**
 * The home segment could not serve: a claim now stands in for the shopper's marker. Take the
 * units from another segment, then finalise the claim; or release it when none can.
 */
export async function spill(
  parts: SegmentParts,
  view: ProductView,
  args: DeductArgs,
  home: number,
  locked: boolean,
  /** the home segment was skipped because its lock was busy (not because it lacked units) */
  homeBusy: boolean,
): Promise<SoldOrder | SaleRefusal | typeof STALE> {
  const homeKeys = parts.segment(view, home);
  const settle = (outcome: 'finalise' | 'release') =>
    claimSettle(parts.redis, homeKeys, args.userId, args.orderId, outcome);
  const warn = (msg: string, err?: unknown) =>
    parts.logger?.warn({ err, orderId: args.orderId }, msg);
  let candidates = spillOrder(view.segments, home, view.empty);
  /** segments (besides home) known empty or found lacking the units */
  let lacking = view.segments - 1 - candidates.length;
  // a shard that just failed is skipped: its segments' units wait for it to come back
  const unreachable = candidates.filter((seg) => parts.shards.down(parts.segment(view, seg).state));
  if (unreachable.length) candidates = candidates.filter((seg) => !unreachable.includes(seg));
  type Tried = SoldOrder | SaleRefusal | typeof STALE | 'busy' | 'empty';
  /** one spill attempt on `seg`: sold, refused, or why not here */
  const attempt = async (seg: number, waitMs: number): Promise<Tried> => {
    // no bucket: the home call took the cell, and a spill is in another slot
    const spillArgs: DeductArgs = {
      ...args,
      mode: 'spill',
      segment: seg,
      fence: 0,
      bucket: undefined,
    };
    let r: DeductReply;
    try {
      const free = locked ? await parts.locking.deductIfFree(view, spillArgs) : undefined;
      if (free && free.code !== 'contended') {
        r = free;
      } else if (locked) {
        const held = await parts.locking.lock(view, seg, waitMs);
        // no lock: busy, or given up because the segment ran empty meanwhile
        if (!held) return view.empty.has(seg) ? 'empty' : 'busy';
        r = await parts.locking.deductHolding(held, spillArgs);
      } else {
        r = await parts.leases.deduct(parts.segment(view, seg), spillArgs);
      }
    } catch (err) {
      // a refusal unsent releases the claim (below); anything else may have sold
      const refusal = failedOn(parts, view, seg, err);
      if (!refusal) throw err;
      return refusal;
    }
    if (r.code === 'ok') {
      if (r.remaining === 0) parts.catalogue.noteEmpty(view, seg);
      await parts.replicaWait?.confirm(parts.segment(view, seg).state);
      // Sold: whatever happens now, the claim must never be released. If finalising
      // fails, the claim stays and the sweeper finalises it from the outbox.
      await settle('finalise').then(
        (settled) => settled.code === 'no-claim' && warn('spill claim settled by another'),
        (err: unknown) => warn('finalising a spill claim failed; the sweeper will', err),
      );
      return soldOrderOf(view, spillArgs, seg, r.outboxId);
    }
    if (r.code === 'empty') {
      if (r.remaining === 0) parts.catalogue.noteEmpty(view, seg);
      return 'empty';
    }
    if (r.code === 'stale-fence') return 'busy';
    return refusalOf(view, r, args.quantity);
  };
  let ended: SoldOrder | SaleRefusal | typeof STALE | undefined;
  try {
    // A pass that skips busy locks (under overload, probing all would multiply the load), then
    // waits on one at a time within lockWaitMs, moving on when one runs empty meanwhile.
    let busy: number[] = [];
    let tried = 0;
    for (; !ended && tried < candidates.length && busy.length < MAX_BUSY_PROBES; tried++) {
      const got = await attempt(candidates[tried]!, 0);
      if (got !== 'busy' && got !== 'empty') ended = got;
      else if (got === 'empty') lacking++;
      else busy.push(candidates[tried]!);
    }
    if (locked) busy.push(...candidates.slice(tried)); // not probed yet: waited for in turn
    const deadline = Date.now() + parts.lockWaitMs;
    while (!ended && locked && busy.length > 0 && Date.now() < deadline) {
      const seg = busy[Math.floor(Math.random() * busy.length)]!;
      const got = await attempt(seg, deadline - Date.now());
      if (got !== 'busy' && got !== 'empty') ended = got;
      else if (got === 'empty') {
        lacking++;
        busy = busy.filter((b) => b !== seg);
      } else if (Date.now() >= deadline) break;
    }
  } catch (err) {
    // A Redis failure may have lost the reply of a deduct that ran: leave the claim to the
    // sweeper, which settles it from the outbox.
    warn('spill interrupted; claim left to the sweeper', err);
    throw err;
  }
  if (ended && ended !== STALE && 'outboxId' in ended) return ended;
  // A refusal (window, reseed), or no segment that sold: nothing sold, the claim is released
  await settle('release');
  if (ended) return ended;
  if (view.soldOut) return soldOut(view);
  if (homeBusy && view.empty.has(home)) homeBusy = false; // busy, but seen empty since
  if (unreachable.length > 0 && lacking + unreachable.length === view.segments - 1 && !homeBusy) {
    // the only segments that might have the units are on a shard that is down
    const seg = unreachable[0]!;
    return shardUnavailable(view.id, seg, parts.shards.down(parts.segment(view, seg).state));
  }
  if (lacking === view.segments - 1 && !homeBusy) {
    // home had fewer than `quantity` units, every other segment none (one unit: sold out now)
    const code = args.quantity === 1 ? 'sold-out' : 'insufficient-stock';
    return { code, message: `no segment of "${view.id}" has ${args.quantity}` };
  }
  // Some segment was busy (or home only busy): its units are still there for a retry.
  return { code: 'lock-timeout', message: `segment locks stayed busy for ${parts.lockWaitMs} ms` };
}
