/**
 * An order event as consumers see it: a CloudEvents 1.0 envelope in structured JSON mode
 * (specversion, id, source, type, subject, time, datacontenttype, data) with one extension
 * attribute, `orderversion`. The same envelope is each webhook delivery's body and each item of
 * the pull feed; its `id` is the delivery's `webhook-id`.
 */

export const EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.cancelled',
  'order.expired',
  'order.returned',
  'order.refunded',
  'order.disputed',
  'order.dispute_won',
  'order.dispute_lost',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The CloudEvents `source` of every order event. */
export const EVENT_SOURCE = '/seckill/orders';

/** An event as stored (order_events). */
export interface OrderEvent {
  /** evt_<order id>_<version> */
  id: string;
  orderId: string;
  version: number;
  type: EventType;
  occurredAt: Date;
  /** the order at this version */
  data: Record<string, unknown>;
  /** where it stands in the feed */
  cursor: FeedCursor;
}

export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: EventType;
  /** the order id */
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  /** the order's version this event made (1: created); per order, never goes back */
  orderversion: number;
  data: Record<string, unknown>;
}

export function cloudEvent(event: OrderEvent): CloudEvent {
  return {
    specversion: '1.0',
    id: event.id,
    source: EVENT_SOURCE,
    type: event.type,
    subject: event.orderId,
    time: event.occurredAt.toISOString(),
    datacontenttype: 'application/json',
    orderversion: event.version,
    data: event.data,
  };
}

/** A place in the feed: the writing transaction's id, then the event's position in it. */
export interface FeedCursor {
  txid: bigint;
  position: bigint;
}

export const FEED_START: FeedCursor = { txid: 0n, position: 0n };

/** `<txid>.<position>` */
export const encodeCursor = (cursor: FeedCursor) => `${cursor.txid}.${cursor.position}`;

/** undefined when `text` is not a cursor this service wrote */
export function decodeCursor(text: string): FeedCursor | undefined {
  const m = /^(\d{1,19})\.(\d{1,19})$/.exec(text);
  if (!m) return undefined;
  const [txid, position] = [BigInt(m[1]!), BigInt(m[2]!)];
  const max = 2n ** 63n - 1n;
  return txid <= max && position <= max ? { txid, position } : undefined;
}

/** -1, 0 or 1 as `a` comes before, at or after `b` */
export function compareCursors(a: FeedCursor, b: FeedCursor): number {
  if (a.txid !== b.txid) return a.txid < b.txid ? -1 : 1;
  return a.position === b.position ? 0 : a.position < b.position ? -1 : 1;
}
