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
import { unknownProduct, type SaleRefusal } from '../errors.js';
import { homeSegment } from '../layout.js';
import { ActivityLeases, type PurchaseDeductArgs as DeductArgs } from './activity-leases.js';
import { mintOrderId } from '../order-ids.js';
import type { DeductReply } from '../protocol.js';
import { MemoryGuard, WINDOW_MARGIN_MS } from './memory-guard.js';
import { GOES_ON, keyedHomeDeduct, recordLeft } from './keyed-deduct.js';
import type { SalePlan, SaleReply } from './outcome.js';
import { refusalOf, shardUnavailable, soldOutRefusal as soldOut, STALE } from './refusals.js';
import { failedOn, soldOrderOf, spill, type SegmentParts } from './spill.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import { SegmentLocking } from './segment-locking.js';
import { bucketToTake, takeBucket } from './shopper-rate.js';

/** What the purchase left so far: the shopper's cell once taken, and the key's record. */
type Left = Pick<SaleReply, 'bucket' | 'record'>;

/**
 * The home segment's answer: the deduct's reply to go on with (`busy`: home's lock stayed busy,
 * so a claim stands there and the units must come from a spill), or the purchase's reply.
 */
type HomeCall = (Left & { reply: DeductReply; busy: boolean }) | SaleReply;

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

const RESEEDING: SaleRefusal = {
  code: 'reseeding',
  message: 'the sale was reseeded during the purchase',
};

const NOTHING_LEFT: Left = { record: 'nothing' };

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

  /**
   * Sells the plan's units to the shopper, or says why not: one call, one reply, with what the
   * purchase left (the shopper's cell, the key's record) for the caller to settle.
   */
  purchase(plan: SalePlan): Promise<SaleReply> {
    return this.onView(plan, NOTHING_LEFT, 0);
  }

  /** {@link MemoryGuard.refusal}: sold out, or outside the window beyond doubt. */
  refusalFromMemory(productId: string): SaleRefusal | undefined {
    return this.guard.refusal(productId);
  }

  /** The purchase on the product's view; loaded again after a reseed under it (`tries`). */
  private async onView(plan: SalePlan, left: Left, tries: number): Promise<SaleReply> {
    // not counted as a refusal: a purchase that met three reseeds
    if (tries === EPOCH_RETRIES) return { kind: 'refused', refusal: RESEEDING, ...left };
    let view: ProductView | null;
    try {
      const got = this.opts.catalogue.get(plan.productId);
      view = got instanceof Promise ? await got : got;
    } catch (cause) {
      return { kind: 'failed', cause, ...left };
    }
    if (!view) return this.refused(null, unknownProduct(plan.productId), left);
    if (view.soldOut) return this.refused(view, soldOut(view), left);
    return this.attempt(view, plan, left, tries);
  }

  private refused(view: ProductView | null, refusal: SaleRefusal, left: Left): SaleReply {
    this.opts.metrics?.result(refusal.code, view?.strategy ?? 'none');
    return { kind: 'refused', refusal, ...left };
  }

  /** One try on a product view: the home segment, then a spill when home cannot serve. */
  private async attempt(
    view: ProductView,
    plan: SalePlan,
    before: Left,
    tries: number,
  ): Promise<SaleReply> {
    const home = homeSegment(plan.userId, view.segments);
    const homeKeys = this.segment(view, home);
    const homeDown = this.shards.down(homeKeys.state);
    if (homeDown) return this.refused(view, shardUnavailable(view.id, home, homeDown), before);
    const args: DeductArgs = {
      // a home segment known to be empty only needs its claim (the limit check lives there)
      mode: view.empty.has(home) ? 'claim' : 'home',
      epoch: view.epoch,
      fence: 0,
      userId: plan.userId,
      quantity: plan.quantity,
      orderId: plan.orderId ?? mintOrderId(view.number),
      productId: view.id,
      segment: home,
      homeSegment: home,
      bucket: bucketToTake(plan.rate, before.bucket),
    };
    const call = await this.home(view, homeKeys, args, plan, before);
    if (!('reply' in call)) {
      const { bucket, record } = call;
      return call.kind === 'refused' ? this.refused(view, call.refusal, { bucket, record }) : call;
    }
    const { reply: r, busy, ...left } = call;
    try {
      if (r.code === 'ok') {
        if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, home);
        await this.opts.replicaWait?.confirm(homeKeys.state);
        return this.sold(view, soldOrderOf(view, args, home, r.outboxId), left);
      }
      if (r.code === 'spill') {
        if (r.remaining === 0) this.opts.catalogue.noteEmpty(view, home);
        const spilled = await spill(
          this.parts,
          view,
          args,
          home,
          view.strategy !== 'lockfree',
          busy,
        );
        return this.settled(view, plan, spilled, left, tries);
      }
      return this.settled(view, plan, refusalOf(view, r, args.quantity), left, tries);
    } catch (cause) {
      return { kind: 'failed', cause, ...left };
    }
  }

  /** A try's end: sold, refused, or reseeded under it (the view reloaded, tried again). */
  private settled(
    view: ProductView,
    plan: SalePlan,
    end: ReturnType<typeof refusalOf> | Awaited<ReturnType<typeof spill>>,
    left: Left,
    tries: number,
  ): SaleReply | Promise<SaleReply> {
    if (end === STALE) {
      this.opts.catalogue.forget(view.id);
      return this.onView(plan, left, tries + 1);
    }
    return 'outboxId' in end ? this.sold(view, end, left) : this.refused(view, end, left);
  }

  private sold(view: ProductView, order: ReturnType<typeof soldOrderOf>, left: Left): SaleReply {
    this.opts.metrics?.result('accepted', view.strategy);
    return { kind: 'sold', order, ...left };
  }

  /**
   * The home segment's call, and the ones a busy lock makes: folded with the key's record while
   * nothing is written under it (a retry after a reseed runs under the record it left); on a
   * locked segment, the free path first, else the lock the full way, else a claim when the lock
   * stays busy. The first call that takes the shopper's cell brings the bucket's answer; the
   * calls after it take none.
   */
  private async home(
    view: ProductView,
    keys: SegmentKeys,
    args: DeductArgs,
    plan: SalePlan,
    before: Left,
  ): Promise<HomeCall> {
    const locked = view.strategy !== 'lockfree';
    let record = before.record;
    let bucket = before.bucket;
    try {
      let first: DeductReply | undefined;
      if (plan.record && record === 'nothing') {
        const folded = keyedHomeDeduct(this.locking, keys, args, plan.record, locked);
        if (!folded) return { kind: 'unfolded', bucket, record };
        record = 'unknown'; // sent: until its reply, the record may have been written
        const k = await folded;
        record = recordLeft(k);
        // a key that finds its record takes no cell in the call
        if (k.code === 'record') return { kind: 'unfolded', found: k.value, bucket, record };
        bucket = k.bucket ?? bucket;
        if (k.code === 'rate-limited') return { kind: 'rate-limited', bucket, record };
        if (!GOES_ON.has(k.code)) return { kind: 'unfolded', bucket, record };
        first = k as DeductReply;
      } else if (locked && args.mode === 'home') {
        first = await this.locking.deductIfFree(view, args);
        // Someone here is on the lock already: the cell is taken before this purchase joins the
        // line (a shopper past their rate never waits for a lock it cannot use).
        if (!first && plan.rate && args.bucket) {
          first = await takeBucket(this.takeRate, keys, plan.userId, plan.rate);
        }
        bucket = first?.bucket ?? bucket;
        if (first?.code === 'rate-limited') return { kind: 'rate-limited', bucket, record };
      }
      if (first && first.code !== 'contended') return { reply: first, busy: false, bucket, record };
      // the calls below take no cell when one was taken
      const rest: DeductArgs = bucket ? { ...args, bucket: undefined } : args;
      if (locked && args.mode === 'home') {
        const { lockWaitMs, lockQueueMs } = this.opts;
        const held = await this.locking.lock(view, args.segment, lockWaitMs, lockQueueMs);
        if (held) {
          const reply = await this.locking.deductHolding(held, rest);
          return { reply, busy: false, bucket, record };
        }
        if (view.soldOut) return { kind: 'refused', refusal: soldOut(view), bucket, record };
        if (view.segments === 1) {
          const refusal: SaleRefusal = {
            code: 'lock-timeout',
            message: `the lock was busy for ${this.opts.lockWaitMs} ms`,
          };
          return { kind: 'refused', refusal, bucket, record };
        }
        const reply = await this.leases.deduct(keys, { ...rest, mode: 'claim' });
        return { reply, busy: true, bucket: reply.bucket ?? bucket, record };
      }
      const reply = await this.leases.deduct(keys, rest);
      bucket = reply.bucket ?? bucket;
      if (reply.code === 'rate-limited') return { kind: 'rate-limited', bucket, record };
      return { reply, busy: false, bucket, record };
    } catch (cause) {
      const refusal = failedOn(this.parts, view, args.segment, cause);
      return refusal
        ? { kind: 'refused', refusal, bucket, record }
        : { kind: 'failed', cause, bucket, record };
    }
  }

  private readonly takeRate = (key: string, limit: RateLimit) =>
    takeRate(this.opts.redis, key, limit);

  private segment(view: { id: string }, seg: number): SegmentKeys {
    return this.segmentKeys.of(view.id, seg);
  }
}
