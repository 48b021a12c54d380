/**
 * The purchase use case, one call per `POST /seckill`: the cheap sold-out guard, admission (sale
 * token, rate limits), then the sale itself, with or without an Idempotency-Key. With a key,
 * every request sells under an order id recorded before it runs, so an answer that never came (a
 * lost Redis reply, a crashed process) is resolved from the sale's own state on the next retry,
 * never simply run again; only final answers are stored and replayed.
 *
 * Everything comes back as an outcome the caller renders: a sale and a refusal as what they mean
 * (PurchaseAnswer), the same whether answered now or replayed from the key's record.
 */
import type { RateDecision } from '../../access/index.js';
import type { RateLimit } from '../../config/index.js';
import type { SaleReply } from '../../inventory/index.js';
import type { Logger } from '../../log.js';
import type { Admission, PendingLimits, RateState } from '../admission/index.js';
import type { Checkout } from './checkout.js';
import {
  requestFingerprint,
  type Begin,
  type IdempotencyHandle,
  type IdempotencyRecords,
} from './idempotency.js';
import {
  answered,
  boughtAll,
  FINAL,
  RATE_LIMITED,
  refused,
  sold,
  unkeyed,
  unknown,
  type Ended,
  type PurchaseOutcome,
} from './outcome.js';

export { type PurchaseOutcome } from './outcome.js';

/** A purchase as the sale takes it. */
export interface PurchaseOrder {
  productId: string;
  userId: string;
  quantity: number;
}

export interface PurchaseCall {
  productId: string;
  quantity: number;
  /**
   * who is buying, as the caller made it out (a promise while a token is checked): awaited only
   * once the guard let the request through, so a known refusal never waits on it
   */
  shopper: string | Promise<string>;
  /**
   * the client address, for the per-address rate limit: made out only when a limit asks (a proxy's
   * forwarded header parsed per request cost a sale without limits ~0.4 us of API CPU)
   */
  ip: () => string;
  saleToken?: string | undefined;
  /** a validated Idempotency-Key, if the client sent one */
  idempotencyKey?: string | undefined;
  /** this request, as a refusal stored under its key names it (a replay names the first one) */
  request: { id: string; url: string };
}

export interface PurchaseDeps {
  checkout: Checkout;
  idempotency: IdempotencyRecords;
  /** rate limits and sale tokens (none: every request goes to the sale) */
  admission?: Admission | undefined;
  /** a shopper is done buying (a sale, replayed or not; limit-reached): a room frees the seat */
  bought?: ((productId: string, userId: string) => void) | undefined;
  logger: Logger;
}

/** A claimed or folded key's purchase: the order, the call, and the shopper's limit if any. */
interface Keyed {
  order: PurchaseOrder;
  key: string;
  call: PurchaseCall;
  /** the shopper's limit, for the home deduct to take a cell of (none: no limit, or taken) */
  rate: RateLimit | undefined;
}

export class PurchaseService {
  constructor(private readonly deps: PurchaseDeps) {}

  /**
   * The cheap guard alone, synchronously: the refusal of a product this process knows is sold
   * out or outside its window, or undefined when only {@link purchase} can tell. The caller may
   * answer from it without a promise (the fast path's refusal flood); {@link purchase} asks it
   * first too.
   */
  fromMemory(
    call: Pick<PurchaseCall, 'productId' | 'idempotencyKey'>,
  ): PurchaseOutcome | undefined {
    // "Sold out? Outside the window?" is asked twice on the way: here (this process's memory:
    // refused before identity, tokens or limits; it tells nothing GET /products/:id does not), and
    // in the deduct script in Redis, which settles the race. A keyed request is not refused here
    // (its retry must see the answer stored under its key), it only skips admission.
    if (call.idempotencyKey !== undefined) return undefined;
    const known = this.deps.checkout.refusalFromMemory(call.productId);
    return known && refused(known);
  }

  async purchase(call: PurchaseCall): Promise<PurchaseOutcome> {
    const { checkout, admission } = this.deps;
    const known = this.fromMemory(call);
    if (known) return known;
    // a product this process never saw: its view first, so the guard answers here as anywhere
    const learning = checkout.learn(call.productId);
    if (learning) {
      await learning;
      const learnt = this.fromMemory(call);
      if (learnt) return learnt;
    }
    const refusedAnyway = checkout.knownRefusal(call.productId);
    const userId = typeof call.shopper === 'string' ? call.shopper : await call.shopper;
    let rate: RateState | undefined;
    let pending: PendingLimits | undefined;
    if (admission && !refusedAnyway) {
      const checked = admission.checkToken(call.productId, userId, call.saleToken);
      const refusal = checked instanceof Promise ? await checked : checked;
      if (refusal) return { kind: 'admission-refused', refusal };
      // no limit configured: not even a promise on the hot path
      if (admission.limited) {
        const limited = await admission.limitPurchase(userId, call.ip(), call.productId);
        if (limited.check?.refusal) {
          return { kind: 'admission-refused', refusal: limited.check.refusal };
        }
        if (limited.check) rate = limited.check.state;
        else pending = limited;
      }
    }
    // the shopper's cell is the home deduct's to take (pending.limit), in the sale's own call
    const order = { productId: call.productId, userId, quantity: call.quantity };
    const key = call.idempotencyKey;
    const { bucket, ...outcome }: Ended =
      key === undefined
        ? await this.once(order, pending?.limit)
        : (refusedAnyway && (await this.knownWithKey(order, key))) ||
          (await this.withKey({ order, key, call, rate: pending?.limit }));
    if (pending && admission) {
      const unknownOutcome = outcome.kind === 'outcome-unknown';
      const settled = await admission.settlePurchase(pending, bucket, unknownOutcome);
      // the home deduct refused the cell (nothing sold), or the cell taken now was refused
      if (settled.refusal) return { kind: 'admission-refused', refusal: settled.refusal };
      rate = settled.state;
    }
    if (outcome.kind === 'answer' && boughtAll(outcome.answer, outcome.replayed)) {
      this.deps.bought?.(call.productId, userId);
    }
    return { ...outcome, rate };
  }

  /**
   * A keyed request for a product the guard refuses: the key's stored answer if it has one (a
   * purchase that sold before the sell-out still answers 202), else the guard's refusal, stored
   * nowhere (one read; a key must not buy a bot a write per request past the limits, which a
   * known refusal skips). Undefined: the key's first run is still open, settle it as usual.
   */
  private async knownWithKey(order: PurchaseOrder, key: string): Promise<Ended | undefined> {
    const refusal = this.deps.checkout.refusalFromMemory(order.productId);
    if (!refusal) return undefined;
    const record = await this.deps.idempotency.peek(order.userId, order.productId, key);
    if (!record) return refused(refusal);
    const fp = requestFingerprint({ productId: order.productId, quantity: order.quantity });
    if (record.fp !== fp) return { kind: 'key-reused' };
    return record.done && answered(record.done, true);
  }

  /** A purchase without a key: a lost answer names the order id it may have sold. */
  private async once(order: PurchaseOrder, rate: RateLimit | undefined): Promise<Ended> {
    const minted = this.deps.checkout.newOrderId(order.productId);
    const orderId = typeof minted === 'string' ? minted : await minted;
    const r = unkeyed(await this.deps.checkout.buy({ ...order, orderId, rate }));
    switch (r.kind) {
      case 'sold':
        return { ...answered(sold(orderId, order)), bucket: r.bucket };
      case 'refused':
        return { ...refused(r.refusal), bucket: r.bucket };
      case 'rate-limited':
        return { ...RATE_LIMITED, bucket: r.bucket };
      case 'failed':
        return { ...unknown(orderId, r.cause), bucket: r.bucket };
    }
  }

  /** A purchase under an Idempotency-Key. */
  private async withKey(keyed: Keyed): Promise<Ended> {
    const { idempotency, checkout } = this.deps;
    const { order, key } = keyed;
    // the parsed request, defaults applied: {"productId":"x"} and {..., "quantity":1} are one
    const fp = requestFingerprint({ productId: order.productId, quantity: order.quantity });
    const fresh = async () => ({
      fp,
      orderId: await checkout.newOrderId(order.productId),
      productId: order.productId,
      quantity: order.quantity,
    });
    const folded = await this.folded(keyed, await fresh());
    if (folded && 'outcome' in folded) return folded.outcome;
    // the folded call took the shopper's cell: the usual way takes none
    const bucket = folded?.bucket;
    const usual = bucket ? { ...keyed, rate: undefined } : keyed;
    const begun = folded?.begun ?? (await idempotency.begin(order.userId, key, await fresh()));
    switch (begun.kind) {
      case 'replay':
        return { ...answered(begun.answer, true), bucket };
      case 'mismatch':
        return { kind: 'key-reused', bucket };
      case 'in-progress':
        return { kind: 'key-in-use', orderId: begun.orderId, retrying: false, bucket };
      case 'full':
        return { kind: 'key-records-full', retryAfterMs: begun.retryAfterMs, bucket };
      case 'new':
        return this.withBucket(await this.run(usual, begun), bucket);
      case 'stale':
        break;
    }
    // The first run ended without an answer (or died): settle its order before anything runs.
    const old = begun.record;
    const resolution = old.orderId
      ? await checkout.resolve(order.productId, order.userId, old.orderId)
      : 'not-sold';
    if (resolution === 'pending') return { ...unknown(old.orderId!, undefined, true), bucket };
    if (resolution === 'sold') {
      const answer = sold(old.orderId!, order);
      const { unknown: _, ...rest } = old;
      await idempotency.takeOver(begun, { ...rest, done: answer });
      return { ...answered(answer, true), bucket };
    }
    const handle = await idempotency.takeOver(begun, await fresh());
    if (!handle) return { kind: 'key-in-use', retrying: true, bucket };
    return this.withBucket(await this.run(usual, handle), bucket);
  }

  /** The cell the folded call took, unless the run that followed took it (it then took none). */
  private withBucket(ended: Ended, bucket: RateDecision | undefined): Ended {
    return bucket && !ended.bucket ? { ...ended, bucket } : ended;
  }

  /**
   * The keyed purchase in one call where its unit comes from the home segment: the deduct reads
   * the key's record and writes it as the claim and the settle would (inventory/sale/keyed-deduct.ts);
   * a spill goes on under the record it wrote, settled as after a claim.
   * @returns the outcome; or the record the key held (`begun`: answered as a claim that found it);
   * or undefined when nothing was written or sold: claim the key the usual way (with `bucket`,
   * the shopper's cell, when the call took it).
   */
  private async folded(
    keyed: Keyed,
    fresh: Parameters<IdempotencyRecords['fold']>[2],
  ): Promise<
    { outcome: Ended } | { begun?: Begin; bucket?: RateDecision | undefined } | undefined
  > {
    const { idempotency, checkout } = this.deps;
    const { order, key, rate } = keyed;
    const orderId = fresh.orderId!;
    const answer = sold(orderId, order);
    const fold = await idempotency.fold(order.userId, key, fresh, answer);
    if (!fold) return undefined;
    const { folded, handle } = fold;
    const r = await checkout.buy({ ...order, orderId, rate, record: folded });
    const { bucket } = r;
    switch (r.kind) {
      case 'unfolded':
        return r.found === undefined
          ? { bucket }
          : { begun: idempotency.foundFolded(handle, r.found), bucket };
      // the shopper's bucket refused the cell in the folded call: nothing written, nothing sold,
      // and no claim the usual way (its deduct would take another cell)
      case 'rate-limited':
        return { outcome: { ...RATE_LIMITED, bucket } };
      case 'sold':
        // a spill sold under the running record: settle it as after a claim
        if (r.record === 'running') {
          await this.note(orderId, 'store', idempotency.finish(handle, answer));
        }
        return { outcome: { ...answered(answer), bucket } };
      case 'refused':
      case 'failed':
        break;
    }
    // refused before the deduct was sent (sold out, a reseed): nothing written, nothing sold
    if (r.record === 'nothing') return { bucket };
    if (r.record === 'running') {
      return { outcome: { ...(await this.ended(handle, keyed, r)), bucket } };
    }
    // no reply: a running record it may have left is marked for the retry to resolve at once
    if (r.record === 'unknown') {
      await this.note(orderId, 'mark unknown', idempotency.unknownIfRunning(folded, handle));
      // a command refused unsent (its shard failed a moment ago) sold nothing
      if (r.kind === 'refused') return { outcome: { ...refused(r.refusal), bucket } };
    }
    const cause = r.kind === 'failed' ? r.cause : undefined;
    return { outcome: { ...unknown(orderId, cause), bucket } };
  }

  /** Runs the purchase the key was claimed for, and records how it ended. */
  private async run(keyed: Keyed, handle: IdempotencyHandle): Promise<Ended> {
    const orderId = handle.record.orderId!;
    const r = unkeyed(await this.deps.checkout.buy({ ...keyed.order, orderId, rate: keyed.rate }));
    if (r.kind !== 'sold') return { ...(await this.ended(handle, keyed, r)), bucket: r.bucket };
    const answer = sold(orderId, keyed.order);
    await this.note(orderId, 'store', this.deps.idempotency.finish(handle, answer));
    return { ...answered(answer), bucket: r.bucket };
  }

  /** A claimed key's purchase ended without a sale: records how it ended. */
  private async ended(
    handle: IdempotencyHandle,
    keyed: Keyed,
    end: Exclude<SaleReply, { kind: 'sold' } | { kind: 'unfolded' }>,
  ): Promise<PurchaseOutcome> {
    const { idempotency } = this.deps;
    const orderId = handle.record.orderId!;
    switch (end.kind) {
      case 'refused': {
        // a transient refusal sold nothing: forget the key, so the retry runs again
        if (FINAL.has(end.refusal.code)) {
          const request = keyed.call.request;
          const answer = { kind: 'refused', refusal: end.refusal, request } as const;
          await this.note(orderId, 'store', idempotency.finish(handle, answer));
        } else {
          await this.note(orderId, 'forget', idempotency.abandon(handle));
        }
        return refused(end.refusal);
      }
      case 'rate-limited':
        // nothing sold, as for a transient refusal: forget the key, so the retry runs again
        await this.note(orderId, 'forget', idempotency.abandon(handle));
        return RATE_LIMITED;
      case 'failed':
        await this.note(orderId, 'mark unknown', idempotency.markUnknown(handle));
        return unknown(orderId, end.cause);
    }
  }

  /** A failure to record is not the purchase's failure: the lease runs out and a retry resolves. */
  private note(orderId: string, what: string, promise: Promise<void>): Promise<void> {
    return promise.catch((err: unknown) =>
      this.deps.logger.warn({ err, orderId }, `idempotency record: ${what} failed`),
    );
  }
}
