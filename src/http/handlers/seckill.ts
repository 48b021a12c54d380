/**
 * `POST /seckill` without a framework: the parsed JSON body, the headers and the client address
 * in, the whole answer out (status, headers, body), errors included. Express's route (shop.ts)
 * and the fast path in front of Express (fast-path.ts) both call it, so a purchase is answered
 * the same way on either; the fast path saves Express's middleware stack on the busiest route.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import { ID_PATTERN } from '../../ids.js';
import type { Logger } from '../../log.js';
import {
  noteRefused,
  type NoteTried,
  type PurchaseOutcome,
  type PurchaseService,
} from '../../services/index.js';
import { rateLimitHeaders } from '../rate-limit-headers.js';
import { shopperId } from '../auth.js';
import { errorAnswer, type HttpAnswer } from '../problem.js';
import { outcomeProblem, purchaseAnswer } from './purchase.js';
import { parseOr400 } from '../validation.js';

/** Largest quantity one request may ask for (the per-user limit is usually far lower). */
export const MAX_QUANTITY = 1_000;

export const purchaseBody = z.strictObject({
  productId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`),
  quantity: z.number().int().min(1).max(MAX_QUANTITY).optional(),
  /** dev auth mode only: who is buying (else the X-User-Id header) */
  userId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`).optional(),
});

type PurchaseBody = z.output<typeof purchaseBody>;

/**
 * The schema's check of a well-formed body, by hand (the schema costs a flood more than the rest
 * of a refusal): the same fields, or undefined for anything else, which the schema then decides,
 * its 400 included. A body the schema would refuse is never accepted here.
 */
function plainPurchase(body: unknown): PurchaseBody | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  for (const k in body)
    if (k !== 'productId' && k !== 'quantity' && k !== 'userId') return undefined;
  const { productId, quantity, userId } = body as Record<string, unknown>;
  if (typeof productId !== 'string' || !ID_PATTERN.test(productId)) return undefined;
  if (
    quantity !== undefined &&
    !(
      Number.isInteger(quantity) &&
      (quantity as number) >= 1 &&
      (quantity as number) <= MAX_QUANTITY
    )
  ) {
    return undefined;
  }
  if (userId !== undefined && (typeof userId !== 'string' || !ID_PATTERN.test(userId))) {
    return undefined;
  }
  // the fields checked are the body's only ones: read as the schema's output
  return body as PurchaseBody;
}

/** Visible ASCII, as the draft's examples; bounded so it cannot bloat Redis. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The Idempotency-Key header, validated. @throws ProblemError 400 */
function idempotencyKeyHeader(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY.test(value)) {
    throw new ProblemError({
      status: 400,
      code: 'invalid-idempotency-key',
      title: 'Invalid Idempotency-Key',
      detail: 'Idempotency-Key must be 1-255 visible ASCII characters',
    });
  }
  return value;
}

/** What a purchase request is, to either caller. */
export interface SeckillRequest {
  /** the request's URL as sent (a problem's `instance`) */
  url: string;
  requestId: string;
  headers: IncomingHttpHeaders;
  /** the client's address (after TRUST_PROXY): read only when a rate limit needs it */
  ip: () => string;
  /** the parsed JSON body; undefined when none was sent */
  body: unknown;
}

/**
 * The answer, synchronously when this process knows it without a promise (a sold-out product, a
 * bad body): the fast path writes it in the same turn; Express's route awaits either.
 */
export type Seckill = (r: SeckillRequest) => HttpAnswer | Promise<HttpAnswer>;

/**
 * The purchase body, validated, and who is buying (asked only when needed: a known sold-out
 * product is refused before identity).
 * @throws ProblemError 400 (no body, bad body, a userId in the body outside dev auth mode)
 */
export function parsePurchase(req: Pick<SeckillRequest, 'body' | 'headers'>, auth: Config['auth']) {
  if (req.body === undefined) {
    throw new ProblemError({
      status: 400,
      code: 'invalid-request',
      title: 'Invalid purchase',
      detail: 'send a JSON body { "productId": "...", "quantity"?: 1 }',
    });
  }
  const body = plainPurchase(req.body) ?? parseOr400(purchaseBody, req.body, 'purchase');
  let buyer = (): string | Promise<string> => shopperId(req, auth);
  if (body.userId !== undefined) {
    if (auth.mode !== 'dev') {
      throw new ProblemError({
        status: 400,
        code: 'invalid-request',
        title: 'Invalid purchase',
        detail: 'userId: the shopper comes from the bearer token; do not send it in the body',
      });
    }
    const given = body.userId;
    if (req.headers['x-user-id'] === undefined) buyer = () => given;
  }
  return { body, buyer };
}

export function seckill(deps: {
  auth: Config['auth'];
  purchase: PurchaseService;
  logger: Logger;
  /** a refused shopper noted as having tried (the fairness report), after the answer is made */
  tried?: NoteTried | undefined;
}): Seckill {
  const facts = (request: SeckillRequest) => ({
    requestId: request.requestId,
    method: 'POST',
    url: request.url,
  });
  /** The HTTP answer of a purchase's outcome. */
  const answerOf = (request: SeckillRequest, outcome: PurchaseOutcome): HttpAnswer => {
    const rate = outcome.rate ? rateLimitHeaders(outcome.rate) : undefined;
    if (outcome.kind !== 'answer') {
      const a = errorAnswer(
        deps.logger,
        outcomeProblem(outcome, request.headers['idempotency-key'] !== undefined),
        facts(request),
      );
      return rate ? { ...a, headers: { ...rate, ...a.headers } } : a;
    }
    const a = purchaseAnswer(outcome.answer, request.url, request.requestId);
    // the refusal of a flood: nothing to add to its headers, nothing to copy
    if (!rate && !outcome.replayed) return a;
    const headers = {
      ...rate,
      ...(outcome.replayed && { 'Idempotent-Replayed': 'true' }),
      ...a.headers,
    };
    // a replay is counted without its problem's code, as the answer it replays was stored without
    return outcome.replayed
      ? { status: a.status, contentType: a.contentType, headers, body: a.body }
      : { ...a, headers };
  };
  return (r) => {
    try {
      const { body, buyer } = parsePurchase(r, deps.auth);
      const saleToken = r.headers['sale-token'];
      const call = {
        productId: body.productId,
        quantity: body.quantity ?? 1,
        saleToken: typeof saleToken === 'string' ? saleToken : undefined,
        idempotencyKey: idempotencyKeyHeader(r.headers['idempotency-key']),
        request: { id: r.requestId, url: r.url },
      };
      // known without a promise (sold out): answered in this turn
      const known = deps.purchase.fromMemory(call);
      if (known) {
        noteRefused(deps.tried, { ...call, shopper: shopperOf(buyer), ip: r.ip }, known);
        return answerOf(r, known);
      }
      const buying = { ...call, shopper: shopperOf(buyer), ip: r.ip };
      return deps.purchase
        .purchase(buying)
        .then((outcome) => {
          noteRefused(deps.tried, buying, outcome);
          return answerOf(r, outcome);
        })
        .catch((err: unknown) => errorAnswer(deps.logger, err, facts(r)));
    } catch (err) {
      return errorAnswer(deps.logger, err, facts(r));
    }
  };
}

/**
 * Who is buying, made out now: the service awaits it once its guard let the request through, so
 * a refusal it learns first (a product this process never saw, sold out) is answered before an
 * identity's 401, as before; a refusal of the identity it never awaits is dropped.
 */
function shopperOf(buyer: () => string | Promise<string>): string | Promise<string> {
  let who: string | Promise<string>;
  try {
    who = buyer();
  } catch (err) {
    who = Promise.reject(err);
  }
  if (typeof who !== 'string') who.catch(() => undefined);
  return who;
}
