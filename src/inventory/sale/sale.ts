/**
 * A purchase, end to end on the Redis side: the product's view, the shopper's home segment, the
 * deduct (lua/deduct-7.lua, the only stock change) under the strategy's locking, a spill to other
 * segments when home is empty or busy, and the spill claim settled.
 */
import { shardDown } from '../../outages.js';
import { sendNow, type RedisClient } from '../../redis/connection.js';
import type { LockClient } from '../../lock/index.js';
import type { Logger } from '../../log.js';
import { SegmentKeyCache, type Keys, type SegmentKeys } from '../../redis/keys.js';
import { takeRate } from '../../redis/rate-limit.js';
import { ShardHealth } from '../../redis/shard-health.js';
import { ServerClock } from '../../redis/time.js';
import type { RateLimit } from '../../config/index.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import { SaleError } from '../errors.js';
import { homeSegment, spillOrder } from '../layout.js';
import { ActivityLeases, type PurchaseDeductArgs as DeductArgs } from './activity-leases.js';
import { mintOrderId } from '../order-ids.js';
import { claimSettle, type DeductReply } from '../protocol.js';
import { soldOrder, type SoldOrder } from '../records/outbox-entry.js';
import { MemoryGuard, WINDOW_MARGIN_MS } from './memory-guard.js';
import { keyedHomeDeduct, type FoldedRecord } from './keyed-deduct.js';
import { refusalOf, shardUnavailable, soldOutRefusal as soldOut, StaleEpoch } from './refusals.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import { SegmentLocking } from './segment-locking.js';
import { bucketToTake, noteBucket, takeBucket, type ShopperRate } from './shopper-rate.js';

export interface PurchaseRequest {
  productId: string;
  userId: string;
  quantity: number;
  /** the order id to sell under (the caller's, so it can resolve a lost answer); else minted */
  orderId?: string | undefined;
  /** an Idempotency-Key's record, written by the home deduct itself (keyed-deduct.ts) */
  keyed?: FoldedRecord | undefined;
  /** the shopper's rate limit, taken by the home deduct (its bucket shares the home slot) */
  rate?: ShopperRate | undefined;
}

export interface SaleMetrics {
  result(result: string, strategy: string): void;
}

export interface SaleOptions {
  redis: RedisClient;
  keys: Keys;
  catalogue: Catalogue;
  /** The segment locks (their in-process latch queues this process's requests per segment). */
  locks: LockClient;
  /** How long to wait for a segment lock in Redis before trying elsewhere. */
  lockWaitMs: number;
  /**
   * How long a purchase may wait in this process's line for its home segment's lock before its
   * `lockWaitMs` starts (a burst parsed at once must not run its waiters' budgets out in line).
   */
  lockQueueMs: number;
  /** Lease of a segment lock held around one deduct. */
  lockLeaseMs: number;
  logger?: Logger | undefined;
  metrics?: SaleMetrics | undefined;
  /** durable mode: a sale returns once this many replicas hold it */
  replicaWait?: ReplicaWait | undefined;
}

/** A reseed between reading the product and deducting: reload and try again this many times. */
const EPOCH_RETRIES = 3;

/**
 * Busy segment locks a spill tries before it waits for one of them. Each probe is a round trip;
 * when every lock is busy (overload), probing all N would turn one purchase into N calls.
 */
const MAX_BUSY_PROBES = 3;

export class Sale {
  private readonly segmentKeys: SegmentKeyCache;
  /** this process's touches of the active set, which every deduct needs */
  private readonly leases: ActivityLeases;
  /** a locked segment's deduct: the free path, else the lock taken the full way */
  private readonly locking: SegmentLocking;
  /** Redis Cluster shards that failed a moment ago (skipped, or their shoppers told 503) */
  readonly shards: ShardHealth;
  /** the refusals known without Redis (sold out, outside the window) */
  readonly guard: MemoryGuard;

  constructor(private readonly opts: SaleOptions) {
    this.segmentKeys = new SegmentKeyCache(opts.keys);
    this.leases = new ActivityLeases(opts);
    this.locking = new SegmentLocking({
      ...opts,
      sendNow,
      leases: this.leases,
      segment: (productId, seg) => this.segmentKeys.of(productId, seg),
      lockName: (productId, seg) => opts.keys.segmentLockName(productId, seg),
    });
    this.shards = new ShardHealth(opts.redis);
    const clock = new ServerClock(opts.redis, WINDOW_MARGIN_MS);
    this.guard = new MemoryGuard({ clock, catalogue: opts.catalogue, metrics: opts.metrics });
  }

  /**
   * Sells `quantity` units to the shopper, or says why not.
   * @throws SaleError (every refusal); Redis errors pass through.
   */
  async purchase(req: PurchaseRequest): Promise<SoldOrder> {
    for (let attempt = 0; attempt < EPOCH_RETRIES; attempt++) {
      const got = this.opts.catalogue.get(req.productId);
      const view = got instanceof Promise ? await got : got;
      if (!view) throw this.refuse(null, 'unknown-product', `no product "${req.productId}"`);
      if (view.soldOut) throw this.refuse(view, 'sold-out', `"${view.id}" is sold out`);
      try {
        const p = await this.attempt(view, req);
        this.opts.metrics?.result('accepted', view.strategy);
        return p;
      } catch (err) {
        if (!(err instanceof StaleEpoch)) {
          if (err instanceof SaleError) this.opts.metrics?.result(err.code, view.strategy);
          throw err;
        }
        this.opts.catalogue.forget(view.id);
      }
    }
    throw new SaleError({
      code: 'reseeding',
      message: 'the sale was reseeded during the purchase',
    });
  }

  /** {@link MemoryGuard.refusal}: sold out, or outside the window beyond doubt. */
  refusalFromMemory(productId: string): SaleError | undefined {
    return this.guard.refusal(productId);
  }

  private refuse(view: ProductView | null, code: SaleError['code'], message: string): SaleError {
    this.opts.metrics?.result(code, view?.strategy ?? 'none');
    return new SaleError({ code, message });
  }

  private async attempt(view: ProductView, req: PurchaseRequest): Promise<SoldOrder> {
    const home = homeSegment(req.userId, view.segments);
    const args: DeductArgs = {
      mode: 'home',
      epoch: view.epoch,
      fence: 0,
      userId: req.userId,
      quantity: req.quantity,
      orderId: req.orderId ?? mintOrderId(view.number),
      productId: view.id,
      segment: home,
      homeSegment: home,
    };
    const locked = view.strategy !== 'lockfree';
    const homeKeys = this.segment(view, home);
    const homeDown = this.shards.down(homeKeys.state);
    if (homeDown) throw shardUnavailable(view.id, home, homeDown);
    // A home segment known to be empty only needs its claim (the limit check lives there).
    if (view.empty.has(home)) args.mode = 'claim';
    const rate = req.rate;
    args.bucket = bucketToTake(rate);
    let r: DeductReply;
    let homeBusy = false;
    try {
      let free: DeductReply | undefined;
      // folded while nothing is written: a retry after a reseed runs under the record it left
      if (req.keyed?.written === 'nothing') {
        free = await keyedHomeDeduct(this.locking, homeKeys, args, req.keyed, { locked, rate });
      } else if (locked && args.mode === 'home') {
        free = await this.locking.deductIfFree(view, args);
        // Someone here is on the lock already: the cell is taken before this purchase joins the
        // line (a shopper past their rate never waits for a lock it cannot use).
        if (!free && rate && args.bucket) free = await takeBucket(this.takeRate, homeKeys, rate);
        if (free) noteBucket(args, rate, free);
      }
      if (free && free.code !== 'contended') {
        r = free;
      } else if (locked && args.mode === 'home') {
        const { lockWaitMs, lockQueueMs } = this.opts;
        const held = await this.locking.lock(view, home, lockWaitMs, lockQueueMs);
        if (held) {
          r = await this.locking.deductHolding(held, args);
        } else if (view.soldOut) {
          throw soldOut(view);
        } else if (view.segments === 1) {
          throw new SaleError({
            code: 'lock-timeout',
            message: `the lock was busy for ${this.opts.lockWaitMs} ms`,
          });
        } else {
          args.mode = 'claim';
          homeBusy = true;
          r = await this.leases.deduct(this.segment(view, home), args);
        }
      } else {
        r = await this.leases.deduct(this.segment(view, home), args);
      }
    } catch (err) {
      throw this.failed(view, home, err);
    }
    noteBucket(args, rate, r);
    if (r.code === 'ok') {
      if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, home);
      await this.opts.replicaWait?.confirm(homeKeys.state);
      return this.purchaseOf(view, args, home, r.outboxId);
    }
    if (r.code !== 'spill') throw refusalOf(view, r, args.quantity);
    if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, home);
    return this.spill(view, args, home, locked, homeBusy);
  }

  /**
   * The home segment could not serve: a claim now stands in for the shopper's marker. Take the
   * units from another segment, then finalise the claim; or release it when none can.
   */
  private async spill(
    view: ProductView,
    args: DeductArgs,
    home: number,
    locked: boolean,
    /** the home segment was skipped because its lock was busy (not because it lacked units) */
    homeBusy: boolean,
  ): Promise<SoldOrder> {
    const homeKeys = this.segment(view, home);
    const settle = (outcome: 'finalise' | 'release') =>
      claimSettle(this.opts.redis, homeKeys, args.userId, args.orderId, outcome);
    const warn = (msg: string, err?: unknown) =>
      this.opts.logger?.warn({ err, orderId: args.orderId }, msg);
    let candidates = spillOrder(view.segments, home, view.empty);
    /** segments (besides home) known empty or found lacking the units */
    let lacking = view.segments - 1 - candidates.length;
    // a shard that just failed is skipped: its segments' units wait for it to come back
    const unreachable = candidates.filter((seg) => this.shards.down(this.segment(view, seg).state));
    if (unreachable.length) candidates = candidates.filter((seg) => !unreachable.includes(seg));
    /** one spill attempt on `seg`: sold, or why not */
    const attempt = async (seg: number, waitMs: number): Promise<SoldOrder | 'busy' | 'empty'> => {
      // no bucket: the home call took the cell (noteBucket), and a spill is in another slot
      const spillArgs: DeductArgs = { ...args, mode: 'spill', segment: seg, fence: 0 };
      let r: DeductReply;
      try {
        const free = locked ? await this.locking.deductIfFree(view, spillArgs) : undefined;
        if (free && free.code !== 'contended') {
          r = free;
        } else if (locked) {
          const held = await this.locking.lock(view, seg, waitMs);
          // no lock: busy, or given up because the segment ran empty meanwhile
          if (!held) return view.empty.has(seg) ? 'empty' : 'busy';
          r = await this.locking.deductHolding(held, spillArgs);
        } else {
          r = await this.leases.deduct(this.segment(view, seg), spillArgs);
        }
      } catch (err) {
        throw this.failed(view, seg, err); // a refusal unsent releases the claim (below)
      }
      if (r.code === 'ok') {
        if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, seg);
        await this.opts.replicaWait?.confirm(this.segment(view, seg).state);
        // Sold: whatever happens now, the claim must never be released. If finalising
        // fails, the claim stays and the sweeper finalises it from the outbox.
        await settle('finalise').then(
          (settled) => settled.code === 'no-claim' && warn('spill claim settled by another'),
          (err: unknown) => warn('finalising a spill claim failed; the sweeper will', err),
        );
        return this.purchaseOf(view, spillArgs, seg, r.outboxId);
      }
      if (r.code === 'empty') {
        if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, seg);
        return 'empty';
      }
      if (r.code === 'stale-fence') return 'busy';
      throw refusalOf(view, r, args.quantity);
    };
    try {
      // A pass that skips busy locks (under overload, probing all would multiply the load), then
      // waits on one at a time within lockWaitMs, moving on when one runs empty meanwhile.
      let busy: number[] = [];
      let tried = 0;
      for (; tried < candidates.length && busy.length < MAX_BUSY_PROBES; tried++) {
        const got = await attempt(candidates[tried]!, 0);
        if (typeof got === 'object') return got;
        if (got === 'empty') lacking++;
        else busy.push(candidates[tried]!);
      }
      if (locked) busy.push(...candidates.slice(tried)); // not probed yet: waited for in turn
      const deadline = Date.now() + this.opts.lockWaitMs;
      while (locked && busy.length > 0 && Date.now() < deadline) {
        const seg = busy[Math.floor(Math.random() * busy.length)]!;
        const got = await attempt(seg, deadline - Date.now());
        if (typeof got === 'object') return got;
        if (got === 'empty') {
          lacking++;
          busy = busy.filter((b) => b !== seg);
        } else if (Date.now() >= deadline) break;
      }
    } catch (err) {
      // A refusal (window, reseed) sold nothing: release. A Redis failure may have lost the reply
      // of a deduct that ran: leave the claim to the sweeper, which settles it from the outbox.
      if (err instanceof SaleError || err instanceof StaleEpoch) await settle('release');
      else warn('spill interrupted; claim left to the sweeper', err);
      throw err;
    }
    await settle('release');
    if (view.soldOut) throw soldOut(view);
    if (homeBusy && view.empty.has(home)) homeBusy = false; // busy, but seen empty since
    if (unreachable.length > 0 && lacking + unreachable.length === view.segments - 1 && !homeBusy) {
      // the only segments that might have the units are on a shard that is down
      const seg = unreachable[0]!;
      throw shardUnavailable(view.id, seg, this.shards.down(this.segment(view, seg).state));
    }
    if (lacking === view.segments - 1 && !homeBusy) {
      // home had fewer than `quantity` units, every other segment none (one unit: sold out now)
      const code = args.quantity === 1 ? 'sold-out' : 'insufficient-stock';
      throw new SaleError({ code, message: `no segment of "${view.id}" has ${args.quantity}` });
    }
    // Some segment was busy (or home only busy): its units are still there for a retry.
    throw new SaleError({
      code: 'lock-timeout',
      message: `segment locks stayed busy for ${this.opts.lockWaitMs} ms`,
    });
  }

  private readonly takeRate = (key: string, limit: RateLimit) =>
    takeRate(this.opts.redis, key, limit);

  /** What a failed command on segment `seg` becomes: one refused unsent sold nothing. */
  private failed(view: ProductView, seg: number, err: unknown): unknown {
    this.shards.failed(this.segment(view, seg).state, err);
    const down = shardDown(err);
    return down ? shardUnavailable(view.id, seg, down) : err;
  }
  private segment(view: { id: string }, seg: number): SegmentKeys {
    return this.segmentKeys.of(view.id, seg);
  }

  private purchaseOf(view: ProductView, args: DeductArgs, seg: number, outboxId: string) {
    const { orderId, productId, userId, quantity, epoch, homeSegment } = args;
    const order = { orderId, productId, userId, quantity, epoch, homeSegment, outboxId };
    return soldOrder({ ...order, segment: seg, payWithinSeconds: view.payWithinSeconds });
  }
}
