/**
 * Shopper routes: `POST /seckill` (buy) and `GET /products/:id` (public view). Thin: parse and
 * validate, call the use case, shape the reply.
 */
import { randomUUID } from 'node:crypto';
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { unknownProduct } from '../inventory/index.js';
import type { Logger } from '../log.js';
import {
  rateLimitHeaders,
  type Admission,
  type Products,
  type PurchaseService,
  type StoredResponse,
} from '../services/index.js';
import { admissionProblem } from './admission-problems.js';
import { shopperId } from './auth.js';
import { outcomeProblem, purchaseAnswers } from './purchase.js';
import { saleProblem } from './sale-problems.js';
import { parseOr400, productIdParam } from './validation.js';

/** Largest quantity one request may ask for (the per-user limit is usually far lower). */
export const MAX_QUANTITY = 1_000;

export const purchaseBody = z.strictObject({
  productId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`),
  quantity: z.number().int().min(1).max(MAX_QUANTITY).optional(),
  /** dev auth mode only: who is buying (else the X-User-Id header) */
  userId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`).optional(),
});

/** Visible ASCII, as the draft's examples; bounded so it cannot bloat Redis. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The Idempotency-Key header, validated. @throws ProblemError 400 */
function idempotencyKeyHeader(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(value)) {
    throw new ProblemError({
      status: 400,
      code: 'invalid-idempotency-key',
      title: 'Invalid Idempotency-Key',
      detail: 'Idempotency-Key must be 1-255 visible ASCII characters',
    });
  }
  return value;
}

export interface ShopRoutes {
  auth: Config['auth'];
  /** the purchase use case: guard, admission, sale, idempotency */
  purchase: PurchaseService;
  products: Products;
  /** sale tokens and their rate limit (none: POST /products/:id/sale-token is refused) */
  admission?: Admission | undefined;
  logger: Logger;
  /** mount POST /bench/noop (the benchmark ceiling) */
  benchRoutes: boolean;
}

/** Mounts the shop routes on `router` (the app itself: a nested router costs every request). */
export function mountShop(router: IRouter, deps: ShopRoutes): void {
  /**
   * Who is buying, asked only when needed (a known sold-out product is refused before identity).
   * @throws ProblemError 400 at once: a userId in the body outside dev auth mode
   */
  function buyer(
    req: Request,
    body: z.output<typeof purchaseBody>,
  ): () => string | Promise<string> {
    if (body.userId !== undefined) {
      if (deps.auth.mode !== 'dev') {
        throw new ProblemError({
          status: 400,
          code: 'invalid-request',
          title: 'Invalid purchase',
          detail: 'userId: the shopper comes from the bearer token; do not send it in the body',
        });
      }
      const given = body.userId;
      if (req.headers['x-user-id'] === undefined) return () => given;
    }
    return () => shopperId(req, deps.auth);
  }

  // Written straight to Node's response: the body is a finished JSON string, so Express's send()
  // (content-type sniffing, ETag, freshness) has nothing to add on this hot path.
  const send = (res: Response, r: StoredResponse) => {
    if (r.headers) for (const k in r.headers) res.setHeader(k, r.headers[k]!);
    res.statusCode = r.status;
    if (r.problem) res.locals.problem = r.problem;
    res.setHeader('Content-Type', `${r.contentType}; charset=utf-8`);
    res.end(r.body);
  };

  function parsePurchase(req: Request) {
    if (req.body === undefined) {
      throw new ProblemError({
        status: 400,
        code: 'invalid-request',
        title: 'Invalid purchase',
        detail: 'send a JSON body { "productId": "...", "quantity"?: 1 }',
      });
    }
    const body = parseOr400(purchaseBody, req.body, 'purchase');
    return { body, buyer: buyer(req, body) };
  }

  router.post('/seckill', async (req, res) => {
    const { body, buyer: who } = parsePurchase(req);
    const outcome = await deps.purchase.purchase(
      {
        productId: body.productId,
        quantity: body.quantity ?? 1,
        buyer: who,
        ip: req.ip ?? '',
        saleToken: req.get('sale-token'),
        idempotencyKey: idempotencyKeyHeader(req.get('idempotency-key')),
      },
      purchaseAnswers(req),
    );
    if (outcome.rate) {
      const h = rateLimitHeaders(outcome.rate);
      for (const k in h) res.setHeader(k, h[k]!);
    }
    if (outcome.kind !== 'answer') throw outcomeProblem(outcome);
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    send(res, outcome.response);
  });

  if (deps.benchRoutes) {
    // The benchmark ceiling: everything POST /seckill does in Express, minus Redis.
    router.post('/bench/noop', async (req, res) => {
      const { body, buyer: who } = parsePurchase(req);
      const userId = who();
      if (typeof userId !== 'string') await userId;
      const orderId = randomUUID();
      send(res, {
        status: 202,
        contentType: 'application/json',
        headers: { Location: `/orders/${orderId}` },
        body: JSON.stringify({
          orderId,
          status: 'pending',
          productId: body.productId,
          quantity: body.quantity ?? 1,
        }),
      });
    });
  }

  router.post('/products/:id/sale-token', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    if (!deps.admission) throw new Error('sale tokens need the admission service');
    const limited = await deps.admission.limit('token', userId, req.ip ?? '');
    if (limited.refusal) throw admissionProblem(limited.refusal);
    if (limited.state) res.set(rateLimitHeaders(limited.state));
    const issued = await deps.admission.issueToken(productId, userId);
    if ('code' in issued) throw admissionProblem(issued);
    res.status(201).json(issued);
  });

  router.get('/products/:id', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const s = await deps.products.state(productId);
    if (!s) throw saleProblem(unknownProduct(productId));
    res.json({
      productId,
      status: s.status,
      remaining: s.remaining,
      total: s.total,
      limitPerUser: s.limitPerUser,
      payWithinSeconds: s.payWithinSeconds || null,
      startsAt: s.startsAt ? new Date(s.startsAt).toISOString() : null,
      endsAt: s.endsAt ? new Date(s.endsAt).toISOString() : null,
    });
  });
}
