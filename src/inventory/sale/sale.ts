/**
 * A purchase, end to end on the Redis side: the product's view, the shopper's home segment, the
 * deduct (lua/deduct-7.lua, the only stock change) under the strategy's locking, a spill to other
 * segments when home is empty or busy, and the spill claim settled.
 */
import { sendNow, type RedisClient } from '../../redis/connection.js';
import type { LockClient } from '../../lock/index.js';
import type { Logger } from '../../log.js';
import { SegmentKeyCache, type Keys, type SegmentKeys } from '../../redis/keys.js';
import { takeRate } from '../../redis/rate-limit.js';
import { ShardHealth } from '../../redis/shard-health.js';
import { ServerClock } from '../../redis/time.js';
import type { RateLimit } from '../../config/index.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import { SaleError, unknownProduct } from '../errors.js';
import { homeSegment } from '../layout.js';
import { ActivityLeases, type PurchaseDeductArgs as DeductArgs } from './activity-leases.js';
import { mintOrderId } from '../order-ids.js';
import type { FoldedRecord } from '../keyed-protocol.js';
import type { DeductReply } from '../protocol.js';
import type { SoldOrder } from '../records/outbox-entry.js';
import { MemoryGuard, WINDOW_MARGIN_MS } from './memory-guard.js';
import { keyedHomeDeduct } from './keyed-deduct.js';
import type { FoldedOutcome, SaleEnd, SaleOutcome, Trip } from './outcome.js';
import { refusalOf, shardUnavailable, soldOutRefusal as soldOut, StaleEpoch } from './refusals.js';
import { failedOn, soldOrderOf, spill, type SegmentParts } from './spill.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import { SegmentLocking } from './segment-locking.js';
import { bucketToTake, noteBucket, takeBucket } from './shopper-rate.js';

export interface PurchaseRequest {
  productId: string;
  userId: string;
  quantity: number;
  /** the order id to sell under (the caller's, so it can resolve a lost answer); else minted */
  orderId?: string | undefined;
  /**
   * the shopper's rate limit, a cell of which the home deduct takes (its bucket shares the home
   * slot); undefined: no cell to take (no limit, or one taken already)
   */
  rate?: RateLimit | undefined;
}

/** An attempt's end short of a sale or a refusal: the shopper's cell refused, or not folded. */
type Stop = { stop: 'rate-limited' } | { stop: 'unfolded'; found?: string | undefined };
const RATE_LIMITED: Stop = { stop: 'rate-limited' };

/** What one attempt on a product view came to. */
type Attempted = SoldOrder | SaleError | StaleEpoch | Stop;

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

const RESEEDING = new SaleError({
  code: 'reseeding',
  message: 'the sale was reseeded during the purchase',
});

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
  /** what a deduct on any of a product's segments needs (the home one's, and a spill's) */
  private readonly parts: SegmentParts;

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
    this.parts = {
      ...opts,
      locking: this.locking,
      leases: this.leases,
      shards: this.shards,
      segment: (view, seg) => this.segment(view, seg),
    };
    const clock = new ServerClock(opts.redis, WINDOW_MARGIN_MS);
    this.guard = new MemoryGuard({ clock, catalogue: opts.catalogue, metrics: opts.metrics });
  }

  /** Sells `quantity` units to the shopper, or says why not. */
  async purchase(req: PurchaseRequest): Promise<SaleOutcome> {
    const trip: Trip = { record: 'nothing' };
    const end = await this.run(req, undefined, trip);
    return 'stop' in end
      ? { kind: 'rate-limited', bucket: trip.bucket }
      : { ...end, bucket: trip.bucket };
  }

  /**
   * {@link purchase} with an Idempotency-Key's record, read and written by the home deduct itself
   * (keyed-deduct.ts): `unfolded` when it wrote nothing (the caller claims the key the usual way).
   */
  async purchaseFolded(req: PurchaseRequest, keyed: FoldedRecord): Promise<FoldedOutcome> {
    const trip: Trip = { record: 'nothing' };
    const end = await this.run(req, keyed, trip);
    if (!('stop' in end)) return { ...end, ...trip };
    return end.stop === 'rate-limited'
      ? { kind: 'rate-limited', ...trip }
      : { kind: 'unfolded', found: end.found, ...trip };
  }

  /** The purchase on the product's view, loaded again after a reseed under it. */
  private async run(
    req: PurchaseRequest,
    keyed: FoldedRecord | undefined,
    trip: Trip,
  ): Promise<SaleEnd | Stop> {
    for (let attempt = 0; attempt < EPOCH_RETRIES; attempt++) {
      let view: ProductView | null;
      let r: Attempted;
      try {
        const got = this.opts.catalogue.get(req.productId);
        view = got instanceof Promise ? await got : got;
        if (!view) return this.refused(null, unknownProduct(req.productId));
        if (view.soldOut) return this.refused(view, soldOut(view));
        r = await this.attempt(view, req, keyed, trip);
      } catch (cause) {
        return { kind: 'failed', cause };
      }
      if (r instanceof StaleEpoch) {
        this.opts.catalogue.forget(view.id);
        continue;
      }
      if (r instanceof SaleError) return this.refused(view, r);
      if ('stop' in r) return r;
      this.opts.metrics?.result('accepted', view.strategy);
      return { kind: 'sold', order: r };
    }
    // not counted as a refusal: a purchase that met three reseeds
    return { kind: 'refused', refusal: RESEEDING };
  }

  /** {@link MemoryGuard.refusal}: sold out, or outside the window beyond doubt. */
  refusalFromMemory(productId: string): SaleError | undefined {
    return this.guard.refusal(productId);
  }

  private refused(view: ProductView | null, refusal: SaleError): SaleEnd {
    this.opts.metrics?.result(refusal.code, view?.strategy ?? 'none');
    return { kind: 'refused', refusal };
  }

  private async attempt(
    view: ProductView,
    req: PurchaseRequest,
    keyed: FoldedRecord | undefined,
    trip: Trip,
  ): Promise<Attempted> {
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
    if (homeDown) return shardUnavailable(view.id, home, homeDown);
    // A home segment known to be empty only needs its claim (the limit check lives there).
    if (view.empty.has(home)) args.mode = 'claim';
    args.bucket = bucketToTake(req.rate, trip);
    let r: DeductReply;
    let homeBusy = false;
    try {
      let free: DeductReply | undefined;
      // folded while nothing is written: a retry after a reseed runs under the record it left
      if (keyed && trip.record === 'nothing') {
        const k = await keyedHomeDeduct(this.locking, homeKeys, args, keyed, locked, trip);
        if (!('reply' in k)) return 'rateLimited' in k ? RATE_LIMITED : { stop: 'unfolded', ...k };
        free = k.reply;
      } else if (locked && args.mode === 'home') {
        free = await this.locking.deductIfFree(view, args);
        // Someone here is on the lock already: the cell is taken before this purchase joins the
        // line (a shopper past their rate never waits for a lock it cannot use).
        if (!free && req.rate && args.bucket) {
          free = await takeBucket(this.takeRate, homeKeys, req.userId, req.rate);
        }
        if (free && noteBucket(args, trip, free)) return RATE_LIMITED;
      }
      if (free && free.code !== 'contended') {
        r = free;
      } else if (locked && args.mode === 'home') {
        const { lockWaitMs, lockQueueMs } = this.opts;
        const held = await this.locking.lock(view, home, lockWaitMs, lockQueueMs);
        if (held) {
          r = await this.locking.deductHolding(held, args);
        } else if (view.soldOut) {
          return soldOut(view);
        } else if (view.segments === 1) {
          return new SaleError({
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
      return failedOn(this.parts, view, home, err);
    }
    if (noteBucket(args, trip, r)) return RATE_LIMITED;
    if (r.code === 'ok') {
      if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, home);
      await this.opts.replicaWait?.confirm(homeKeys.state);
      return soldOrderOf(view, args, home, r.outboxId);
    }
    if (r.code !== 'spill') return refusalOf(view, r, args.quantity);
    if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, home);
    return spill(this.parts, view, args, home, locked, homeBusy);
  }

  private readonly takeRate = (key: string, limit: RateLimit) =>
    takeRate(this.opts.redis, key, limit);

  private segment(view: { id: string }, seg: number): SegmentKeys {
    return this.segmentKeys.of(view.id, seg);
  }
}
