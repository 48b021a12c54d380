/**
 * The purchase use case, one call per `POST /seckill`: the cheap sold-out guard, admission (sale
 * token, rate limits), then the sale itself, with or without an Idempotency-Key. With a key,
 * every request sells under an order id recorded before it runs, so an answer that never came (a
 * lost Redis reply, a crashed process) is resolved from the sale's own state on the next retry,
 * never simply run again; only final answers are stored and replayed.
 *
 * The answers stored for replay are HTTP-shaped (StoredResponse), so the caller renders them
 * through {@link PurchaseAnswers}; everything else comes back as an outcome the caller maps.
 */
import { NotFolded, SaleError, ShopperRateLimited, type ShopperRate } from '../inventory/index.js';
import type { Logger } from '../log.js';
import type { Admission, PendingLimits, RateState } from './admission.js';
import { OutcomeUnknown, type Checkout } from './checkout.js';
import {
  requestFingerprint,
  type Begin,
  type IdempotencyHandle,
  type IdempotencyRecords,
  type StoredResponse,
} from './idempotency.js';
import {
  boughtAll,
  FINAL,
  RATE_LIMITED,
  refused,
  unknown,
  type PurchaseOutcome,
} from './purchase-outcome.js';

export { type PurchaseOutcome } from './purchase-outcome.js';

export interface PurchaseOrder {
  productId: string;
  userId: string;
  quantity: number;
  /** the shopper's rate limit, for the sale's home deduct to take (not part of any answer) */
  rate?: ShopperRate | undefined;
}

export interface PurchaseCall {
  productId: string;
  quantity: number;
  /** who is buying: asked only once the cheap guard let the request through */
  buyer: () => string | Promise<string>;
  /** the client address, for the per-address rate limit (asked only when a limit applies) */
  ip: () => string;
  saleToken?: string | undefined;
  /** a validated Idempotency-Key, if the client sent one */
  idempotencyKey?: string | undefined;
}

/** How the caller writes the two answers a purchase stores: accepted, and a sale refusal. */
export interface PurchaseAnswers {
  accepted(orderId: string, order: PurchaseOrder): StoredResponse;
  refused(err: SaleError): StoredResponse;
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

export class PurchaseService {
  constructor(private readonly deps: PurchaseDeps) {}

  /**
   * The cheap guard alone, synchronously: the refusal of a product this process knows is sold
   * out or outside its window, or undefined when only {@link purchase} can tell. The caller may
   * answer from it without a promise (the fast path's refusal flood); {@link purchase} asks it
   * first too.
   */
  fromMemory(call: PurchaseCall, answers: PurchaseAnswers): PurchaseOutcome | undefined {
    // "Sold out? Outside the window?" is asked twice on the way: here (this process's memory:
    // refused before identity, tokens or limits; it tells nothing GET /products/:id does not), and
    // in the deduct script in Redis, which settles the race. A keyed request is not refused here
    // (its retry must see the answer stored under its key), it only skips admission.
    if (call.idempotencyKey !== undefined) return undefined;
    const known = this.deps.checkout.refusalFromMemory(call.productId);
    return known && { kind: 'answer', response: answers.refused(known), replayed: false };
  }

  async purchase(call: PurchaseCall, answers: PurchaseAnswers): Promise<PurchaseOutcome> {
    const { checkout, admission } = this.deps;
    const known = this.fromMemory(call, answers);
    if (known) return known;
    // a product this process never saw: its view first, so the guard answers here as anywhere
    const learning = checkout.learn(call.productId);
    if (learning) {
      await learning;
      const learnt = this.fromMemory(call, answers);
      if (learnt) return learnt;
    }
    const refusedAnyway = checkout.knownRefusal(call.productId);
    const who = call.buyer();
    const userId = typeof who === 'string' ? who : await who;
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
    // the shopper's cell is the home deduct's to take (pending.rate), in the sale's own call
    const order = { productId: call.productId, userId, quantity: call.quantity };
    const sale = { ...order, rate: pending?.rate };
    const outcome =
      call.idempotencyKey === undefined
        ? await this.once(sale, answers)
        : (refusedAnyway && (await this.knownWithKey(order, call.idempotencyKey, answers))) ||
          (await this.withKey(sale, call.idempotencyKey, answers));
    if (pending && admission) {
      const settled = await admission.settlePurchase(pending, outcome.kind === 'outcome-unknown');
      // the home deduct refused the cell (nothing sold), or the cell taken now was refused
      if (settled.refusal) return { kind: 'admission-refused', refusal: settled.refusal };
      rate = settled.state;
    }
    // A waiting room's seat is done with once its shopper has bought: a sale (a replay too: the
    // first answer may have been lost, a 503 that sold), or limit-reached (an earlier try sold)
    if (outcome.kind === 'answer' && boughtAll(outcome.response)) {
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
  private async knownWithKey(
    order: PurchaseOrder,
    key: string,
    answers: PurchaseAnswers,
  ): Promise<PurchaseOutcome | undefined> {
    const refusal = this.deps.checkout.refusalFromMemory(order.productId);
    if (!refusal) return undefined;
    const record = await this.deps.idempotency.peek(order.userId, order.productId, key);
    if (!record) return { kind: 'answer', response: answers.refused(refusal), replayed: false };
    const fp = requestFingerprint({ productId: order.productId, quantity: order.quantity });
    if (record.fp !== fp) return { kind: 'key-reused' };
    return record.done && { kind: 'answer', response: record.done, replayed: true };
  }

  /** A purchase without a key: a lost answer names the order id it may have sold. */
  private async once(order: PurchaseOrder, answers: PurchaseAnswers): Promise<PurchaseOutcome> {
    const minted = this.deps.checkout.newOrderId(order.productId);
    const orderId = typeof minted === 'string' ? minted : await minted;
    try {
      await this.deps.checkout.buy({ ...order, orderId });
      return { kind: 'answer', response: answers.accepted(orderId, order), replayed: false };
    } catch (err) {
      if (err instanceof SaleError) {
        return { kind: 'answer', response: answers.refused(err), replayed: false };
      }
      if (err instanceof ShopperRateLimited) return RATE_LIMITED;
      if (err instanceof OutcomeUnknown) return unknown(orderId, err.cause);
      throw err;
    }
  }

  /** A purchase under an Idempotency-Key. */
  private async withKey(
    purchase: PurchaseOrder,
    key: string,
    answers: PurchaseAnswers,
  ): Promise<PurchaseOutcome> {
    const { idempotency, checkout } = this.deps;
    // the parsed request, defaults applied: {"productId":"x"} and {..., "quantity":1} are one
    const fp = requestFingerprint({ productId: purchase.productId, quantity: purchase.quantity });
    const fresh = async () => ({
      fp,
      orderId: await checkout.newOrderId(purchase.productId),
      productId: purchase.productId,
      quantity: purchase.quantity,
    });
    const folded = await this.folded(purchase, key, await fresh(), answers);
    if (folded && 'outcome' in folded) return folded.outcome;
    const begun = folded?.begun ?? (await idempotency.begin(purchase.userId, key, await fresh()));
    switch (begun.kind) {
      case 'replay':
        return { kind: 'answer', response: begun.response, replayed: true };
      case 'mismatch':
        return { kind: 'key-reused' };
      case 'in-progress':
        return { kind: 'key-in-use', orderId: begun.orderId, retrying: false };
      case 'full':
        return { kind: 'key-records-full', retryAfterMs: begun.retryAfterMs };
      case 'new':
        return this.run(purchase, begun, answers);
      case 'stale':
        break;
    }
    // The first run ended without an answer (or died): settle its order before anything runs.
    const old = begun.record;
    const resolution = old.orderId
      ? await checkout.resolve(purchase.productId, purchase.userId, old.orderId)
      : 'not-sold';
    if (resolution === 'pending') return unknown(old.orderId!, undefined, true);
    if (resolution === 'sold') {
      const response = answers.accepted(old.orderId!, purchase);
      const { unknown: _, ...rest } = old;
      await idempotency.takeOver(begun, { ...rest, done: response });
      return { kind: 'answer', response, replayed: true };
    }
    const handle = await idempotency.takeOver(begun, await fresh());
    if (!handle) return { kind: 'key-in-use', retrying: true };
    return this.run(purchase, handle, answers);
  }

  /**
   * The keyed purchase in one call where its unit comes from the home segment: the deduct reads
   * the key's record and writes it as the claim and the settle would (inventory/sale/keyed-deduct.ts);
   * a spill goes on under the record it wrote, settled as after a claim.
   * @returns the outcome; or the record the key held (`begun`: answered as a claim that found it);
   * or undefined when nothing was written or sold: claim the key the usual way.
   */
  private async folded(
    order: PurchaseOrder,
    key: string,
    fresh: Parameters<IdempotencyRecords['fold']>[2],
    answers: PurchaseAnswers,
  ): Promise<{ outcome: PurchaseOutcome } | { begun: Begin } | undefined> {
    const { idempotency, checkout } = this.deps;
    const orderId = fresh.orderId!;
    const response = answers.accepted(orderId, order);
    const fold = await idempotency.fold(order.userId, key, fresh, response);
    if (!fold) return undefined;
    const { folded, handle } = fold;
    try {
      await checkout.buy({ ...order, orderId, keyed: folded });
    } catch (err) {
      if (err instanceof NotFolded) {
        return err.found === undefined
          ? undefined
          : { begun: idempotency.foundFolded(handle, err.found) };
      }
      // the shopper's bucket refused the cell in the folded call: nothing written, nothing sold,
      // and no claim the usual way (its deduct would take another cell)
      if (err instanceof ShopperRateLimited) return { outcome: RATE_LIMITED };
      // refused before the deduct was sent (sold out, a reseed): nothing written, nothing sold
      if (folded.written === 'nothing') return undefined;
      if (folded.written === 'running') return { outcome: await this.ended(handle, err, answers) };
      // no reply: a running record it may have left is marked for the retry to resolve at once
      if (folded.written === 'unknown') {
        await this.note(orderId, 'mark unknown', idempotency.unknownIfRunning(folded, handle));
        // a command refused unsent (its shard failed a moment ago) sold nothing
        if (err instanceof SaleError) return { outcome: refused(answers.refused(err)) };
      }
      if (err instanceof OutcomeUnknown) return { outcome: unknown(orderId, err.cause) };
      throw err;
    }
    // a spill sold under the running record: settle it as after a claim
    if (folded.written === 'running') {
      await this.note(orderId, 'store', idempotency.finish(handle, response));
    }
    return { outcome: { kind: 'answer', response, replayed: false } };
  }

  /** Runs the purchase the key was claimed for, and records how it ended. */
  private async run(
    order: PurchaseOrder,
    handle: IdempotencyHandle,
    answers: PurchaseAnswers,
  ): Promise<PurchaseOutcome> {
    const orderId = handle.record.orderId!;
    try {
      await this.deps.checkout.buy({ ...order, orderId });
    } catch (err) {
      return this.ended(handle, err, answers);
    }
    const response = answers.accepted(orderId, order);
    await this.note(orderId, 'store', this.deps.idempotency.finish(handle, response));
    return { kind: 'answer', response, replayed: false };
  }

  /** A claimed key's purchase failed with `err`: records how it ended. */
  private async ended(
    handle: IdempotencyHandle,
    err: unknown,
    answers: PurchaseAnswers,
  ): Promise<PurchaseOutcome> {
    const { idempotency } = this.deps;
    const orderId = handle.record.orderId!;
    if (err instanceof SaleError) {
      const response = answers.refused(err);
      // a transient refusal sold nothing: forget the key, so the retry runs again
      if (FINAL.has(err.code))
        await this.note(orderId, 'store', idempotency.finish(handle, response));
      else await this.note(orderId, 'forget', idempotency.abandon(handle));
      return refused(response);
    }
    if (err instanceof ShopperRateLimited) {
      // nothing sold, as for a transient refusal: forget the key, so the retry runs again
      await this.note(orderId, 'forget', idempotency.abandon(handle));
      return RATE_LIMITED;
    }
    await this.note(orderId, 'mark unknown', idempotency.markUnknown(handle));
    if (err instanceof OutcomeUnknown) return unknown(orderId, err.cause);
    throw err;
  }

  /** A failure to record is not the purchase's failure: the lease runs out and a retry resolves. */
  private note(orderId: string, what: string, promise: Promise<void>): Promise<void> {
    return promise.catch((err: unknown) =>
      this.deps.logger.warn({ err, orderId }, `idempotency record: ${what} failed`),
    );
  }
}
