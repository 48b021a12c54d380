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
  type Checkout,
  type IdempotencyStore,
  type Products,
  type StoredResponse,
} from '../services/index.js';
import { shopperId } from './auth.js';
import { PurchaseFlow, refusal } from './purchase.js';
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
function idempotencyKey(value: string | undefined): string | undefined {
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
  checkout: Checkout;
  products: Products;
  idempotency: IdempotencyStore;
  /** rate limits and sale tokens (none: every request goes to the sale) */
  admission?: Admission | undefined;
  logger: Logger;
  /** mount POST /bench/noop (the benchmark ceiling) */
  benchRoutes: boolean;
}

/** Mounts the shop routes on `router` (the app itself: a nested router costs every request). */
export function mountShop(router: IRouter, deps: ShopRoutes): void {
  function buyer(req: Request, body: z.output<typeof purchaseBody>): string | Promise<string> {
    if (body.userId !== undefined) {
      if (deps.auth.mode !== 'dev') {
        throw new ProblemError({
          status: 400,
          code: 'invalid-request',
          title: 'Invalid purchase',
          detail: 'userId: the shopper comes from the bearer token; do not send it in the body',
        });
      }
      if (req.headers['x-user-id'] === undefined) return body.userId;
    }
    return shopperId(req, deps.auth);
  }

  const flow = new PurchaseFlow(deps);

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
    return { body, userId: buyer(req, body) };
  }

  router.post('/seckill', async (req, res) => {
    if (req.get('idempotency-key') === undefined && req.body !== undefined) {
      // The cheap guard: a product this process knows is sold out is refused before identity,
      // tokens or limits (it tells nothing GET /products/:id does not), exactly as the fast path
      // in front of Express does. The race itself is settled by the deduct script in Redis.
      const parsed = purchaseBody.safeParse(req.body);
      const known = parsed.success
        ? deps.checkout.refusalFromMemory(parsed.data.productId)
        : undefined;
      if (known && parsed.data!.userId === undefined) return send(res, refusal(req, known));
    }
    const { body, userId: who } = parsePurchase(req);
    const userId = typeof who === 'string' ? who : await who;
    const admission = deps.admission;
    // a product known sold out is answered from memory: no token check, no limiter call
    if (admission && !admission.soldOutFromMemory(body.productId)) {
      const checked = admission.checkToken(body.productId, userId, req.get('sale-token'));
      if (checked) await checked;
      // no limit configured: not even a promise on the hot path
      const state = admission.limited
        ? await admission.limit('seckill', userId, req.ip ?? '')
        : undefined;
      if (state) {
        const h = rateLimitHeaders(state);
        for (const k in h) res.setHeader(k, h[k]!);
      }
    }
    const key = idempotencyKey(req.get('idempotency-key'));
    const order = { productId: body.productId, userId, quantity: body.quantity ?? 1 };
    if (key === undefined) return send(res, await flow.once(req, order));
    const { response, replayed } = await flow.withKey(req, order, key);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    send(res, response);
  });

  if (deps.benchRoutes) {
    // The benchmark ceiling: everything POST /seckill does in Express, minus Redis.
    router.post('/bench/noop', async (req, res) => {
      const { body, userId } = parsePurchase(req);
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
    const state = await deps.admission.limit('token', userId, req.ip ?? '');
    if (state) res.set(rateLimitHeaders(state));
    res.status(201).json(await deps.admission.issueToken(productId, userId));
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
