/**
 * Shopper routes: `POST /seckill` (buy) and `GET /products/:id` (public view). Thin: parse and
 * validate, call the sale, shape the reply.
 */
import { randomUUID } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { ProblemError } from '../errors.js';
import {
  readProductState,
  SaleError,
  saleProblem,
  unknownProduct,
  type Purchase,
  type Sale,
} from '../inventory/index.js';
import type { Redis } from 'ioredis';
import { ID_PATTERN, type Keys } from '../redis/keys.js';

import { shopperId } from './auth.js';
import { IdempotencyStore, type StoredResponse } from './idempotency.js';
import { problemBody, PROBLEM_JSON } from './problem.js';
import { parseOr400, productIdParam } from './validation.js';

/** Largest quantity one request may ask for (the per-user limit is usually far lower). */
export const MAX_QUANTITY = 1_000;

const purchaseBody = z.strictObject({
  productId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`),
  quantity: z.number().int().min(1).max(MAX_QUANTITY).optional(),
  /** dev auth mode only: who is buying (else the X-User-Id header) */
  userId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`).optional(),
});

/**
 * Redis failed mid-purchase (down, restarting, reply lost). A 503 the client may retry: if the
 * deduct did run, the order is in the outbox and a retry answers limit-reached with its id.
 */
function storeUnavailable(cause: unknown): ProblemError {
  return new ProblemError({
    status: 503,
    code: 'store-unavailable',
    title: 'Inventory store unavailable, try again',
    detail: 'the purchase could not be completed; retry with the same Idempotency-Key',
    headers: { 'Retry-After': '1' },
    cause,
  });
}

export interface ShopDeps {
  config: Config;
  sale: Sale;
  redis: Redis;
  keys: Keys;
  /** Hands a sold order on for persistence (the order queue); the outbox already holds it. */
  onPurchase?: (p: Purchase) => void;
}

export function shopRouter(d: ShopDeps): Router {
  const router = Router();
  const idempotency = new IdempotencyStore(d.redis, d.keys, d.config.sale.idempotencyTtlSeconds);

  function buyer(req: Request, body: z.output<typeof purchaseBody>): string {
    if (body.userId !== undefined) {
      if (d.config.auth.mode !== 'dev') {
        throw new ProblemError({
          status: 400,
          code: 'invalid-request',
          title: 'Invalid purchase',
          detail: 'userId: the shopper comes from the bearer token; do not send it in the body',
        });
      }
      if (req.headers['x-user-id'] === undefined) return body.userId;
    }
    return shopperId(req, d.config.auth);
  }

  async function answer(req: Request, userId: string, body: z.output<typeof purchaseBody>) {
    try {
      const p = await d.sale.purchase({
        productId: body.productId,
        userId,
        quantity: body.quantity ?? 1,
      });
      d.onPurchase?.(p);
      return {
        status: 202,
        contentType: 'application/json',
        headers: { Location: `/orders/${p.orderId}` },
        body: JSON.stringify({
          orderId: p.orderId,
          status: 'pending',
          productId: p.productId,
          quantity: p.quantity,
        }),
      } satisfies StoredResponse;
    } catch (err) {
      if (!(err instanceof SaleError)) throw storeUnavailable(err);
      const problem = saleProblem(err);
      return {
        status: problem.status,
        contentType: PROBLEM_JSON,
        headers: problem.headers,
        body: JSON.stringify(problemBody(req, problem)),
      } satisfies StoredResponse;
    }
  }

  const send = (res: Response, r: StoredResponse) => {
    for (const [k, v] of Object.entries(r.headers ?? {})) res.setHeader(k, v);
    res.status(r.status).type(r.contentType).send(r.body);
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
    return { body, userId: buyer(req, body) };
  }

  router.post('/seckill', async (req, res) => {
    const { body, userId } = parsePurchase(req);
    const key = IdempotencyStore.parseKey(req.get('idempotency-key'));
    if (key === undefined) return send(res, await answer(req, userId, body));

    const fp = IdempotencyStore.fingerprint(body);
    const begun = await idempotency.begin(userId, key, fp);
    if (begun.kind === 'replay') {
      res.setHeader('Idempotent-Replayed', 'true');
      return send(res, begun.response);
    }
    let r: StoredResponse;
    try {
      r = await answer(req, userId, body);
    } catch (err) {
      await idempotency.finish(begun.key, fp, { status: 500, contentType: '', body: '' });
      throw err;
    }
    await idempotency.finish(begun.key, fp, r);
    send(res, r);
  });

  if (d.config.bench.routes) {
    // The benchmark ceiling: everything POST /seckill does in Express, minus Redis.
    router.post('/bench/noop', (req, res) => {
      const { body } = parsePurchase(req);
      const orderId = randomUUID();
      res
        .status(202)
        .setHeader('Location', `/orders/${orderId}`)
        .type('application/json')
        .send(
          JSON.stringify({
            orderId,
            status: 'pending',
            productId: body.productId,
            quantity: body.quantity ?? 1,
          }),
        );
    });
  }

  router.get('/products/:id', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const s = await readProductState(d, productId);
    if (!s) throw saleProblem(unknownProduct(productId));
    res.json({
      productId,
      status: s.status,
      remaining: s.remaining,
      total: s.total,
      limitPerUser: s.limitPerUser,
      startsAt: s.startsAt ? new Date(s.startsAt).toISOString() : null,
      endsAt: s.endsAt ? new Date(s.endsAt).toISOString() : null,
    });
  });

  return router;
}
