/**
 * `POST /seckill`'s answers: a purchase through checkout, with or without an Idempotency-Key.
 * With a key, every request sells under an order id recorded before it runs, so an answer that
 * never came (a lost Redis reply, a crashed process) is resolved from the sale's own state on the
 * next retry, never simply run again; only final answers are stored and replayed.
 */
import type { Request } from 'express';
import { ProblemError } from '../errors.js';
import { SaleError, type SaleErrorCode } from '../inventory/index.js';
import {
  IdempotencyStore,
  OutcomeUnknown,
  type Checkout,
  type IdempotencyHandle,
  type StoredResponse,
} from '../services/index.js';
import type { Logger } from '../log.js';
import { problemBody, PROBLEM_JSON } from './problem.js';
import { saleProblem } from './sale-problems.js';

/** Refusals that hold for this request for good: stored and replayed to a retry with its key. */
const FINAL: ReadonlySet<SaleErrorCode> = new Set([
  'sold-out',
  'insufficient-stock',
  'limit-reached',
  'ended',
]);

export interface PurchaseOrder {
  productId: string;
  userId: string;
  quantity: number;
}

const accepted = (orderId: string, o: PurchaseOrder): StoredResponse => ({
  status: 202,
  contentType: 'application/json',
  headers: { Location: `/orders/${orderId}` },
  body: JSON.stringify({
    orderId,
    status: 'pending',
    productId: o.productId,
    quantity: o.quantity,
  }),
});

export function refusal(req: Request, err: SaleError | ProblemError): StoredResponse {
  const problem = err instanceof SaleError ? saleProblem(err) : err;
  return {
    status: problem.status,
    contentType: PROBLEM_JSON,
    headers: problem.headers,
    body: JSON.stringify(problemBody(req, problem)),
    problem: problem.code,
  };
}

/**
 * The store failed mid-purchase, which may have sold under `orderId`: the client learns how to
 * find out (a retry with the same key resolves it; it is never bought twice).
 */
function outcomeUnknown(orderId: string, cause: unknown, pending = false): ProblemError {
  return new ProblemError({
    status: 503,
    code: pending ? 'outcome-pending' : 'store-unavailable',
    title: pending ? 'Purchase still settling' : 'Inventory store unavailable, try again',
    detail: pending
      ? 'the purchase of this order is still being completed; retry in a moment'
      : `the purchase may or may not have sold (order ${orderId}): retry with the same ` +
        `Idempotency-Key, or GET /orders/${orderId}, to learn which; it is never bought twice`,
    headers: { 'Retry-After': '1' },
    extensions: { orderId },
    cause,
  });
}

export interface PurchaseFlowDeps {
  checkout: Checkout;
  idempotency: IdempotencyStore;
  logger: Logger;
}

export class PurchaseFlow {
  constructor(private readonly deps: PurchaseFlowDeps) {}

  /** A purchase without a key: a lost answer is a 503 naming the order id it may have sold. */
  async once(req: Request, o: PurchaseOrder): Promise<StoredResponse> {
    const early = this.deps.checkout.refusalFromMemory(o.productId);
    if (early) return refusal(req, early);
    const minted = this.deps.checkout.newOrderId(o.productId);
    const orderId = typeof minted === 'string' ? minted : await minted;
    try {
      await this.deps.checkout.buy({ ...o, orderId });
      return accepted(orderId, o);
    } catch (err) {
      if (err instanceof SaleError) return refusal(req, err);
      if (err instanceof OutcomeUnknown) throw outcomeUnknown(orderId, err.cause);
      throw err;
    }
  }

  /** A purchase under an Idempotency-Key. */
  async withKey(
    req: Request,
    o: PurchaseOrder,
    key: string,
  ): Promise<{ response: StoredResponse; replayed: boolean }> {
    const { idempotency, checkout } = this.deps;
    // the parsed request, defaults applied: {"productId":"x"} and {..., "quantity":1} are one
    const fp = IdempotencyStore.fingerprint({ productId: o.productId, quantity: o.quantity });
    const fresh = async () => ({
      fp,
      orderId: await checkout.newOrderId(o.productId),
      productId: o.productId,
      quantity: o.quantity,
    });
    const begun = await idempotency.begin(o.userId, key, await fresh());
    switch (begun.kind) {
      case 'replay':
        return { response: begun.response, replayed: true };
      case 'mismatch':
        throw new ProblemError({
          status: 422,
          code: 'idempotency-key-reused',
          title: 'Idempotency-Key reused with another request',
          detail: 'this Idempotency-Key was used with a different body',
        });
      case 'in-progress':
        throw new ProblemError({
          status: 409,
          code: 'idempotency-key-in-use',
          title: 'A request with this Idempotency-Key is in progress',
          detail: 'retry once the first request has been answered',
          headers: { 'Retry-After': '1' },
          ...(begun.orderId && { extensions: { orderId: begun.orderId } }),
        });
      case 'full':
        throw new ProblemError({
          status: 429,
          code: 'idempotency-records-full',
          title: 'Too many Idempotency-Keys in use',
          detail:
            'you hold as many Idempotency-Key records as allowed, each of a purchase that sold ' +
            'or is still running; retry later, or without a new key',
          headers: { 'Retry-After': String(Math.max(1, Math.ceil(begun.retryAfterMs / 1000))) },
        });
      case 'new':
        return { response: await this.run(req, o, begun), replayed: false };
      case 'stale':
        break;
    }
    // The first run ended without an answer (or died): settle its order before anything runs.
    const old = begun.record;
    const resolution = old.orderId
      ? await checkout.resolve(o.productId, o.userId, old.orderId)
      : 'not-sold';
    if (resolution === 'pending') throw outcomeUnknown(old.orderId!, undefined, true);
    if (resolution === 'sold') {
      const response = accepted(old.orderId!, o);
      const { unknown: _, ...rest } = old;
      await idempotency.takeOver(begun, { ...rest, done: response });
      return { response, replayed: true };
    }
    const handle = await idempotency.takeOver(begun, await fresh());
    if (!handle) {
      throw new ProblemError({
        status: 409,
        code: 'idempotency-key-in-use',
        title: 'A request with this Idempotency-Key is in progress',
        detail: 'another retry of this request is running; retry once it has been answered',
        headers: { 'Retry-After': '1' },
      });
    }
    return { response: await this.run(req, o, handle), replayed: false };
  }

  /** Runs the purchase the key was claimed for, and records how it ended. */
  private async run(req: Request, o: PurchaseOrder, h: IdempotencyHandle) {
    const { idempotency, checkout, logger } = this.deps;
    const orderId = h.record.orderId!;
    // A failure to record is not the purchase's failure: the lease runs out and a retry resolves.
    const record = (what: string, p: Promise<void>) =>
      p.catch((err: unknown) =>
        logger.warn({ err, orderId }, `idempotency record: ${what} failed`),
      );
    try {
      await checkout.buy({ ...o, orderId });
      const response = accepted(orderId, o);
      await record('store', idempotency.finish(h, response));
      return response;
    } catch (err) {
      if (err instanceof SaleError) {
        const response = refusal(req, err);
        // a transient refusal sold nothing: forget the key, so the retry runs again
        if (FINAL.has(err.code)) await record('store', idempotency.finish(h, response));
        else await record('forget', idempotency.abandon(h));
        return response;
      }
      await record('mark unknown', idempotency.markUnknown(h));
      throw err instanceof OutcomeUnknown ? outcomeUnknown(orderId, err.cause) : err;
    }
  }
}
