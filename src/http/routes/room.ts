/**
 * The waiting room's routes (docs/waiting-room.md): `POST /products/:id/queue` joins,
 * `GET /products/:id/queue` answers the shopper's place. The poll is framework-free, as
 * `POST /seckill` is (seckill.ts): Express's route and the fast path ahead of Express call the
 * same function, and a poll this process can answer from memory comes back without a promise.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { IRouter } from 'express';
import type { Config } from '../../config/index.js';
import { ProblemError } from '../../errors.js';
import { unknownProduct } from '../../inventory/index.js';
import type { Logger } from '../../log.js';
import {
  pushRequest,
  type PlaceAnswer,
  type PushAnswer,
  type TurnPush,
  type WaitingRoom,
} from '../../services/index.js';
import { rateLimitHeaders } from '../rate-limit-headers.js';
import { admissionProblem } from '../admission-problems.js';
import { accountCreatedAt, shopperId } from '../auth.js';
import { errorAnswer, type HttpAnswer } from '../problem.js';
import { saleProblem } from '../sale-problems.js';
import { parseOr400, productIdParam } from '../validation.js';

export interface PlaceRequest {
  url: string;
  requestId: string;
  headers: IncomingHttpHeaders;
  productId: string | undefined;
  /** the client's address (TRUST_PROXY), read only when polls are limited */
  ip: () => string;
}

export type PlacePoll = (r: PlaceRequest) => HttpAnswer | Promise<HttpAnswer>;

/** Retry-After of a join refused for memory: memory frees as an operator acts or places end. */
const STORE_SHORT_RETRY_S = 30;

/** The path of a poll: `/products/<id>/queue`, the id captured (validated by the route). */
export const PLACE_PATH = /^\/products\/([^/?]+)\/queue$/;

function problemOf(
  answer: Exclude<PlaceAnswer | PushAnswer, { kind: 'view' | 'kept' }> | { kind: 'no-push' },
  productId: string,
): ProblemError {
  switch (answer.kind) {
    case 'no-push':
      return new ProblemError({
        status: 404,
        code: 'push-off',
        title: 'No Web Push here',
        detail: 'this service sends no Web Push (no VAPID keys): keep the queue page open',
      });
    case 'push-service-refused':
      return new ProblemError({
        status: 422,
        code: 'push-service-refused',
        title: 'Push service not allowed',
        detail: `this service does not send to ${answer.origin} (PUSH_SERVICE_ORIGINS)`,
      });
    case 'refused':
      return admissionProblem(answer.refusal);
    case 'unknown-product':
      return saleProblem(unknownProduct(productId));
    case 'no-room':
      return new ProblemError({
        status: 404,
        code: 'no-waiting-room',
        title: 'No waiting room',
        detail: 'this product is sold without a waiting room: POST /seckill',
      });
    case 'room-full':
      return new ProblemError({
        status: 409,
        code: 'room-full',
        title: 'The line is full',
        detail: `this waiting room holds ${answer.maxPlaces} places, all taken: nobody new joins this sale`,
      });
    case 'store-short':
      return new ProblemError({
        status: 503,
        code: 'room-store-full',
        title: 'The waiting room takes no new places now',
        detail:
          'its store is near its memory limit: places held are kept and the sale goes on; try again later',
        headers: { 'Retry-After': String(STORE_SHORT_RETRY_S) },
      });
    case 'not-joined':
      return new ProblemError({
        status: 404,
        code: 'not-in-queue',
        title: 'Not in the queue',
        detail: 'join first: POST this URL',
      });
  }
}

/** The HTTP answer of a place (or the problem), as a finished JSON string. */
function answerOf(answer: PlaceAnswer, productId: string): HttpAnswer {
  if (answer.kind !== 'view') throw problemOf(answer, productId);
  const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
  if (answer.view.pollAfterSeconds !== null) {
    headers['Retry-After'] = String(answer.view.pollAfterSeconds);
  }
  if (answer.rate) Object.assign(headers, rateLimitHeaders(answer.rate));
  return {
    status: 200,
    contentType: 'application/json',
    headers,
    body: JSON.stringify(answer.view),
  };
}

export function placePoll(deps: {
  auth: Config['auth'];
  room: WaitingRoom;
  logger: Logger;
}): PlacePoll {
  return (request) => {
    const fail = (err: unknown) =>
      errorAnswer(deps.logger, err, {
        requestId: request.requestId,
        method: 'GET',
        url: request.url,
      });
    try {
      const productId = productIdParam(request.productId);
      const who = shopperId(request, deps.auth);
      const polled =
        typeof who === 'string'
          ? deps.room.poll(productId, who, request.ip)
          : who.then((userId) => deps.room.poll(productId, userId, request.ip));
      if (!(polled instanceof Promise)) return answerOf(polled, productId);
      return polled.then((a) => answerOf(a, productId)).catch(fail);
    } catch (err) {
      return fail(err);
    }
  };
}

export function mountRoom(
  router: IRouter,
  deps: {
    auth: Config['auth'];
    room?: WaitingRoom | undefined;
    poll?: PlacePoll | undefined;
    /** the turn's Web Push; none: a subscription is answered 404 push-off */
    turnPush?: TurnPush | undefined;
  },
): void {
  const { room, poll } = deps;
  if (!room || !poll) return; // a process without waiting rooms: 404 as any unknown route
  router.post('/products/:id/queue', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    const a = answerOf(
      await room.join(productId, userId, req.ip ?? '', {
        challenge: req.get('challenge'),
        fingerprint: req.get('shopper-fingerprint'),
        accountCreatedAt: await accountCreatedAt(req, deps.auth),
      }),
      productId,
    );
    res.status(a.status).set(a.headers).type('application/json').send(a.body);
  });
  // the shopper's Web Push subscription for their turn (docs/queue-page.md#web-push)
  router.post('/products/:id/queue/push', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const userId = await shopperId(req, deps.auth);
    const body = parseOr400(pushRequest, req.body, 'push subscription');
    if (!deps.turnPush) throw problemOf({ kind: 'no-push' }, productId);
    const answer = await deps.turnPush.subscribe(productId, userId, req.ip ?? '', body);
    if (answer.kind !== 'kept') throw problemOf(answer, productId);
    res.status(204).end();
  });
  router.get('/products/:id/queue', async (req, res) => {
    const a = await poll({
      url: req.originalUrl,
      requestId: req.id,
      headers: req.headers,
      productId: req.params.id,
      ip: () => req.ip ?? '',
    });
    if (a.problem) res.locals.problem = a.problem;
    res.status(a.status).set(a.headers).type(a.contentType).send(a.body);
  });
}
