/**
 * Every event type there is, by family: the family's CloudEvents `source` and its types. The one
 * list that endpoints subscribe from (`POST /admin/webhook-endpoints`, `seckill webhooks add`;
 * `["*"]` is every type listed when the endpoint is registered) and that OpenAPI's enum shows. A
 * feature that publishes product events (product-events.ts) adds its family here, and documents
 * its types' `data` in docs/events.md and OpenAPI.
 */

export const EVENT_FAMILIES = {
  orders: {
    source: '/seckill/orders',
    types: [
      'order.created',
      'order.paid',
      'order.cancelled',
      'order.expired',
      'order.returned',
      'order.refunded',
      'order.disputed',
      'order.dispute_won',
      'order.dispute_lost',
    ],
  },
  rooms: {
    source: '/seckill/rooms',
    types: ['room.admitted', 'room.expiring', 'room.passed-over', 'room.sold-out'],
  },
  draws: {
    source: '/seckill/draws',
    types: ['draw.frozen', 'draw.drawn', 'draw.won', 'draw.passed-on'],
  },
  fairness: {
    source: '/seckill/fairness',
    types: ['fairness.report'],
  },
} as const;

type Family = (typeof EVENT_FAMILIES)[keyof typeof EVENT_FAMILIES];
export type EventType = Family['types'][number];

/** Every type of every family, orders first. */
export const EVENT_TYPES = Object.values(EVENT_FAMILIES).flatMap(
  (family: Family) => family.types,
) as unknown as readonly [EventType, ...EventType[]];

/** The CloudEvents `source` of every order event. */
export const EVENT_SOURCE = EVENT_FAMILIES.orders.source;
