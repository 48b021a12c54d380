/** The waiting room's operations (docs/waiting-room.md), part of operations.ts's table. */
import { ADMIN, ADMIN_REFUSALS, idParam, SHOPPER, type Operation } from './components.js';

const product = idParam('id', 'product id');

/** The door's refusals (docs/fairness.md), on a join, a sale token and a draw's entry of a product that asks a challenge. */
export const CHALLENGE_PROBLEMS = {
  403: 'challenge-required, -invalid, -expired or -foreign: the Challenge header is missing or does not answer a challenge of this shopper and product',
  409: 'challenge-replayed: that answer was taken already',
  425: 'challenge-too-soon: a proof of work answered before its floor (Retry-After)',
  429: 'challenge-spaced: a flagged address or identity gets one challenge per flagged floor (Retry-After)',
  503: 'challenge-unverified: the provider did not answer (Retry-After)',
} as const;

export const ROOM_OPERATIONS: Operation[] = [
  {
    method: 'post',
    route: '/products/:id/queue',
    operationId: 'joinQueue',
    tag: 'shop',
    summary: "Join a product's waiting room (again: the same place)",
    security: SHOPPER,
    parameters: [product],
    ok: { 200: ['QueuePlace', 'the place', ['Retry-After', 'RateLimit', 'RateLimit-Policy']] },
    problems: {
      400: 'bad id',
      401: 'no identity',
      403: CHALLENGE_PROBLEMS[403],
      404: 'unknown product, or one without a waiting room',
      409: `room-full: the line holds ROOM_MAX_PLACES places already; ${CHALLENGE_PROBLEMS[409]}`,
      425: CHALLENGE_PROBLEMS[425],
      429: CHALLENGE_PROBLEMS[429],
      503: `room-store-full: the room's Redis is near its maxmemory (REDIS_MEMORY_SHED_AT), no new place is written; Retry-After; ${CHALLENGE_PROBLEMS[503]}`,
    },
    store: true,
    limited: true,
  },
  {
    method: 'get',
    route: '/products/:id/queue',
    operationId: 'pollQueue',
    tag: 'shop',
    summary: 'The place of a shopper who joined: from memory, ahead of the framework',
    security: SHOPPER,
    parameters: [product],
    ok: { 200: ['QueuePlace', 'the place; once admitted, its sale token', ['Retry-After']] },
    problems: {
      400: 'bad id',
      401: 'no identity',
      404: 'unknown product, no waiting room, or a shopper who holds no place (also after the end)',
      429: 'over RATE_LIMIT_POLL_IP (polls per client address, counted per process), with Retry-After',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/products/:id/queue/push',
    operationId: 'subscribeTurnPush',
    tag: 'shop',
    summary:
      "Hand over the shopper's Web Push subscription: a push when admitted, and before the admission ends",
    security: SHOPPER,
    parameters: [product],
    body: { schema: 'PushSubscriptionRequest', required: true },
    ok: { 204: ['empty', 'kept for this sale (a new one replaces it)'] },
    problems: {
      401: 'no identity',
      404: 'unknown product, no waiting room, a shopper who holds no place, or push-off: no VAPID keys here',
      422: 'push-service-refused: the subscription names a push service not in PUSH_SERVICE_ORIGINS',
    },
    store: true,
    limited: true,
  },
  {
    method: 'get',
    route: '/products/:id/challenge',
    operationId: 'getChallenge',
    tag: 'shop',
    summary: "A challenge for this shopper at the product's door (CHALLENGE)",
    security: SHOPPER,
    parameters: [product],
    ok: {
      200: [
        'Challenge',
        'a proof of work to solve, or the widget to show',
        ['RateLimit', 'RateLimit-Policy'],
      ],
    },
    problems: {
      400: 'bad id',
      401: 'no identity',
      404: 'unknown product',
      409: 'no-challenge-needed: the door of this product asks none',
      429: `rate limited; ${CHALLENGE_PROBLEMS[429]}`,
    },
    store: true,
    limited: true,
  },
  {
    method: 'get',
    route: '/queue/sw.js',
    operationId: 'queuePageWorker',
    tag: 'shop',
    summary: "The queue page's service worker (shows the turn's push with the page closed)",
    ok: { 200: ['javascript', 'the worker, scope /queue/ (Service-Worker-Allowed)'] },
  },
  {
    method: 'get',
    route: '/queue/assets/:file',
    operationId: 'queuePageAsset',
    tag: 'shop',
    summary:
      "The queue page's script, style and theme, named by their content's hash: cached for good",
    parameters: [idParam('file', 'an asset name the page links, <name>.<hash>.<ext>')],
    ok: { 200: ['asset', 'the asset (Cache-Control: immutable)'] },
    problems: { 404: 'no such asset (an older release: reload the page)' },
  },
  {
    method: 'get',
    route: '/queue/:id',
    operationId: 'queuePage',
    tag: 'shop',
    summary:
      "The product's queue page (HTML) in the shopper's language (?lang=, else Accept-Language): the page a shop sends shoppers to, or frames",
    parameters: [
      product,
      {
        name: 'lang',
        in: 'query',
        required: false,
        description: 'en, de or fr: overrides Accept-Language',
        schema: { type: 'string' },
      },
    ],
    ok: { 200: ['html', 'the page (framable by CORS_ORIGINS only)'] },
    problems: { 400: 'bad id' },
  },
  {
    method: 'get',
    route: '/queue/:id/skip',
    operationId: 'queuePageDecoy',
    tag: 'shop',
    summary:
      "The queue page's decoy link (docs/fairness.md): hidden from people, followed by scripts; the identity it carries (bearer token or X-User-Id) is noted for the sale's decoy rule",
    parameters: [product],
    ok: { 404: ['html', 'a plain not-found page, always'] },
    problems: { 400: 'bad id' },
  },
  {
    method: 'get',
    route: '/admin/products/:id/fairness',
    operationId: 'getFairness',
    tag: 'admin',
    summary:
      "The current sale's fairness report: bots' units against a fair draw (docs/fairness.md)",
    security: ADMIN,
    parameters: [product],
    ok: { 200: ['FairnessReport', 'the report, live until the sale ends'] },
    problems: { ...ADMIN_REFUSALS, 404: 'unknown product' },
    store: true,
  },
];
