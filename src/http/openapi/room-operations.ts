/** The waiting room's operations (docs/waiting-room.md), part of operations.ts's table. */
import { idParam, SHOPPER, type Operation } from './components.js';

const product = idParam('id', 'product id');

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
      404: 'unknown product, or one without a waiting room',
      409: 'room-full: the line holds ROOM_MAX_PLACES places already',
      503: "room-store-full: the room's Redis is near its maxmemory (REDIS_MEMORY_SHED_AT), no new place is written; Retry-After",
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
];
