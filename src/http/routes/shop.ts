/**
 * Shopper routes: `POST /seckill` (buy) and `GET /products/:id` (public view). Thin: parse and
 * validate, call the use case, shape the reply.
 */
import { randomUUID } from 'node:crypto';
import type { IRouter, Response } from 'express';
import type { Config } from '../../config/index.js';
import { unknownProduct, type ProductState } from '../../inventory/index.js';
import type { Logger } from '../../log.js';
import type { Admission, ChallengeGate, ProductDoor, Products } from '../../services/index.js';
import { rateLimitHeaders } from '../rate-limit-headers.js';
import { admissionProblem } from '../admission-problems.js';
import { accountCreatedAt, shopperId } from '../auth.js';
import type { HttpAnswer } from '../problem.js';
import { saleProblem } from '../sale-problems.js';
import { parsePurchase, type Seckill } from '../handlers/seckill.js';
import { productIdParam } from '../validation.js';
import { queuePagePath } from './queue-page.js';

export interface ShopRoutes {
  auth: Config['auth'];
  /** POST /seckill, answered (seckill.ts) */
  seckill: Seckill;
  products: Products;
  /** sale tokens and their rate limit (none: POST /products/:id/sale-token is refused) */
  admission?: Admission | undefined;
  logger: Logger;
  /** challenges at the door (none: GET /products/:id/challenge answers 409) */
  door?: ChallengeGate | undefined;
  /** mount POST /bench/noop (the benchmark ceiling) */
  benchRoutes: boolean;
}

/** A waiting room's state as a storefront shows it (the sale's status, from the room's side). */
function roomState(state: ProductState): 'lobby' | 'open' | 'paused' | 'sold-out' | 'ended' {
  const { status } = state;
  if (status === 'ended' || status === 'paused') return status;
  if (status === 'sold out') return 'sold-out';
  return status === 'upcoming' ? 'lobby' : 'open';
}

const doorView = (door: ProductDoor | null) => door && { kind: door.kind, siteKey: door.siteKey };

/** Mounts the shop routes on `router` (the app itself: a nested router costs every request). */
export function mountShop(router: IRouter, deps: ShopRoutes): void {
  // Written straight to Node's response: the body is a finished JSON string, so Express's send()
  // (content-type sniffing, ETag, freshness) has nothing to add on this hot path.
  const send = (res: Response, answer: HttpAnswer) => {
    for (const k in answer.headers) res.setHeader(k, answer.headers[k]!);
    res.statusCode = answer.status;
    if (answer.problem) res.locals.problem = answer.problem;
    res.setHeader('Content-Type', `${answer.contentType}; charset=utf-8`);
    // set here, as Express's send() does, so the headers come in the same order on every path
    res.setHeader('Content-Length', Buffer.byteLength(answer.body));
    res.end(answer.body);
  };

  // The route's work is seckill.ts's (the fast path in front of Express calls the same function).
  router.post('/seckill', async (req, res) => {
    send(
      res,
      await deps.seckill({
        url: req.originalUrl,
        requestId: req.id,
        headers: req.headers,
        ip: () => req.ip ?? '',
        body: req.body,
      }),
    );
  });

  if (deps.benchRoutes) {
    // The benchmark ceiling: everything POST /seckill does in Express, minus Redis.
    router.post('/bench/noop', async (req, res) => {
      const { body, buyer: who } = parsePurchase(req, deps.auth);
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
    const issued = await deps.admission.issueToken(productId, userId, {
      ip: req.ip ?? '',
      challenge: req.get('challenge'),
      fingerprint: req.get('shopper-fingerprint'),
      accountCreatedAt: await accountCreatedAt(req, deps.auth),
    });
    if ('code' in issued) throw admissionProblem(issued);
    res.status(201).json(issued);
  });

  router.get('/products/:id/challenge', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    if (!deps.admission) throw new Error('challenges need the admission service');
    const limited = await deps.admission.limit('token', userId, req.ip ?? '');
    if (limited.refusal) throw admissionProblem(limited.refusal);
    if (limited.state) res.set(rateLimitHeaders(limited.state));
    const issued = deps.door
      ? await deps.door.issue(productId, userId, req.ip ?? '')
      : ({ code: 'no-challenge-needed', detail: 'this deployment asks no challenge' } as const);
    if ('code' in issued) throw admissionProblem(issued);
    res.set('Cache-Control', 'no-store').json(issued);
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
      paused: s.paused,
      waitingRoom: s.waitingRoom && {
        state: roomState(s),
        ...s.waitingRoom,
        pageUrl: queuePagePath(productId),
      },
      price: s.price,
      // what a page needs to solve the door: the kind, and the widget's site key
      challenge: doorView(deps.door?.doorOf(productId, s.challenge) ?? null),
    });
  });
}
