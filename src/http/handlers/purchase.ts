/**
 * `POST /seckill`'s answers: the purchase service's outcome rendered as HTTP, the one place that
 * does it (an answer given now, and one replayed from its key's record, alike). The protocol
 * itself (guard, admission, idempotency, resolution of a lost answer) is services/purchase/purchase.ts.
 */
import { ProblemError } from '../../errors.js';
import type { PurchaseAnswer, PurchaseOutcome } from '../../services/index.js';
import { admissionProblem } from '../admission-problems.js';
import { problemAnswer, type HttpAnswer } from '../problem.js';
import { saleProblem } from '../sale-problems.js';

/**
 * The HTTP answer of a purchase's answer to the request at `url` (`requestId`); a stored refusal
 * names the request it first answered, so a replay is the same bytes. `headers` may be the
 * answer's own: copy before adding to them.
 */
export function purchaseAnswer(answer: PurchaseAnswer, url: string, requestId: string): HttpAnswer {
  switch (answer.kind) {
    case 'sold':
      return {
        status: 202,
        contentType: 'application/json',
        headers: { Location: `/orders/${answer.orderId}` },
        body: JSON.stringify({
          orderId: answer.orderId,
          status: 'pending',
          productId: answer.productId,
          quantity: answer.quantity,
        }),
      };
    case 'refused': {
      // a refusal is answered as the error handler answers its problem
      const first = answer.request;
      return problemAnswer(first?.url ?? url, first?.id ?? requestId, saleProblem(answer.refusal));
    }
    case 'sent': {
      const { status, contentType, body, headers } = answer.response;
      return { status, contentType, body, headers: headers ?? {} };
    }
  }
}

/**
 * The answer of an outcome that is not a stored response.
 * @throws ProblemError, the error handler's to write
 */
export function outcomeProblem(
  result: Exclude<PurchaseOutcome, { kind: 'answer' }>,
  keyed: boolean,
): ProblemError {
  switch (result.kind) {
    case 'admission-refused':
      return admissionProblem(result.refusal);
    case 'key-reused':
      return new ProblemError({
        status: 422,
        code: 'idempotency-key-reused',
        title: 'Idempotency-Key reused with another request',
        detail: 'this Idempotency-Key was used with a different body',
      });
    case 'key-in-use':
      return new ProblemError({
        status: 409,
        code: 'idempotency-key-in-use',
        title: 'A request with this Idempotency-Key is in progress',
        detail: result.retrying
          ? 'another retry of this request is running; retry once it has been answered'
          : 'retry once the first request has been answered',
        headers: { 'Retry-After': '1' },
        ...(result.orderId && { extensions: { orderId: result.orderId } }),
      });
    case 'key-records-full':
      return new ProblemError({
        status: 429,
        code: 'idempotency-records-full',
        title: 'Too many Idempotency-Keys in use',
        detail:
          'you hold as many Idempotency-Key records as allowed, each of a purchase that sold ' +
          'or is still running; retry later, or without a new key',
        headers: { 'Retry-After': String(Math.max(1, Math.ceil(result.retryAfterMs / 1000))) },
      });
    case 'outcome-unknown':
      return outcomeUnknown(result.orderId, result.cause, result.pending, keyed);
  }
}

/**
 * The store failed mid-purchase, which may have sold under `orderId`: the client learns how to
 * find out (a retry with the same key resolves it; it is never bought twice). Without a key, a
 * retry is a new purchase: the order's state says whether it sold.
 */
function outcomeUnknown(
  orderId: string,
  cause: unknown,
  pending: boolean,
  keyed: boolean,
): ProblemError {
  return new ProblemError({
    status: 503,
    code: pending ? 'outcome-pending' : 'store-unavailable',
    title: pending ? 'Purchase still settling' : 'Inventory store unavailable, try again',
    detail: pending
      ? 'the purchase of this order is still being completed; retry in a moment'
      : keyed
        ? `the purchase may or may not have sold (order ${orderId}): retry with the same ` +
          `Idempotency-Key, or GET /orders/${orderId}, to learn which; it is never bought twice`
        : `the purchase may or may not have sold (order ${orderId}): GET /orders/${orderId} ` +
          'to learn which before buying again (a purchase sent with an Idempotency-Key can ' +
          'simply be retried)',
    headers: { 'Retry-After': '1' },
    extensions: { orderId },
    cause,
  });
}
