/** The draw's operations (docs/draw.md), part of operations.ts's table. */
import { idParam, SHOPPER, type Operation } from './components.js';
import { CHALLENGE_PROBLEMS } from './room-operations.js';

const product = idParam('id', 'product id');

export const DRAW_OPERATIONS: Operation[] = [
  {
    method: 'post',
    route: '/products/:id/draw/entry',
    operationId: 'enterDraw',
    tag: 'shop',
    summary: "Enter a product's draw (again: the same entry)",
    security: SHOPPER,
    parameters: [product],
    ok: {
      200: ['DrawEntry', 'the entry already held', ['RateLimit', 'RateLimit-Policy']],
      201: ['DrawEntry', 'entered', ['RateLimit', 'RateLimit-Policy']],
    },
    problems: {
      400: 'bad id',
      401: 'no identity',
      403: CHALLENGE_PROBLEMS[403],
      404: 'unknown product, or one not sold by a draw',
      409: `draw-closed: entries closed (a shopper entered before gets the entry); draw-full: ROOM_MAX_PLACES entries; ${CHALLENGE_PROBLEMS[409]}`,
      425: `entries-not-open: before entriesOpenAt, with Retry-After; ${CHALLENGE_PROBLEMS[425]}`,
      429: CHALLENGE_PROBLEMS[429],
      503: `draw-store-full: the draw's Redis is near its maxmemory, no new entry is written; Retry-After; ${CHALLENGE_PROBLEMS[503]}`,
    },
    store: true,
    limited: true,
  },
  {
    method: 'delete',
    route: '/products/:id/draw/entry',
    operationId: 'withdrawDrawEntry',
    tag: 'shop',
    summary: 'Withdraw from a draw, until its close',
    security: SHOPPER,
    parameters: [product],
    ok: { 200: ['DrawWithdrawn', 'withdrawn', ['RateLimit', 'RateLimit-Policy']] },
    problems: {
      400: 'bad id',
      401: 'no identity',
      404: 'unknown product, not a draw, or no entry of this shopper',
      409: 'draw-closed: after the close nothing is withdrawn',
    },
    store: true,
    limited: true,
  },
  {
    method: 'get',
    route: '/products/:id/draw/entry',
    operationId: 'getDrawEntry',
    tag: 'shop',
    summary: "The shopper's entry: state, rank, the Merkle proof, the sale token when won",
    security: SHOPPER,
    parameters: [product],
    ok: { 200: ['DrawEntryView', 'the entry', ['Retry-After']] },
    problems: {
      400: 'bad id',
      401: 'no identity',
      404: 'unknown product, not a draw, or no entry of this shopper',
      429: 'over RATE_LIMIT_POLL_IP (reads per client address, counted per process), with Retry-After',
    },
    store: true,
  },
  {
    method: 'get',
    route: '/products/:id/draw',
    operationId: 'getDrawTranscript',
    tag: 'shop',
    summary:
      "A draw's public transcript: everything needed to recompute it (npx seckill verify-draw)",
    parameters: [product],
    ok: { 200: ['DrawTranscript', 'the transcript'] },
    problems: { 400: 'bad id', 404: 'unknown product, or one not sold by a draw' },
    store: true,
  },
  {
    method: 'get',
    route: '/products/:id/draw/entries',
    operationId: 'getDrawEntries',
    tag: 'shop',
    summary: "A draw's frozen list: the sorted entry ids, paged (or every one as NDJSON)",
    parameters: [
      product,
      { name: 'after', in: 'query', required: false, schema: { type: 'string' } },
      {
        name: 'limit',
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: 1, maximum: 10_000 },
      },
      { name: 'format', in: 'query', required: false, schema: { enum: ['json', 'ndjson'] } },
    ],
    ok: { 200: ['draw-entries', 'a page (or the rest of the list as NDJSON)', ['Link']] },
    problems: {
      400: 'bad id or query',
      404: 'unknown product, or one not sold by a draw',
      409: 'draw-not-frozen: the list exists from the freeze on',
    },
    store: true,
  },
];
