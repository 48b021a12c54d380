/**
 * An event as consumers see it: a CloudEvents 1.0 envelope in structured JSON mode
 * (specversion, id, source, type, subject, time, datacontenttype, data) with extension
 * attributes: an order event's `orderversion`; a product event's `subjectsequence` and
 * `productid`. The same envelope is each webhook delivery's body and each item of the pull feed;
 * its `id` is the delivery's `webhook-id`.
 */
import type { EventType } from './event-types.js';

/**
 * An event as stored: an order's (order_events, written by triggers) or a product's
 * (product_events, published by application code).
 */
export interface FeedEvent {
  /** an order's evt_<order id>_<version>; a product event's producer id */
  id: string;
  /** the family: /seckill/orders, or the product event's */
  source: string;
  /** the order id, or the subject its producer chose */
  subject: string;
  /** the order's version, or the subject's sequence number: per subject, it only goes up */
  sequence: number;
  type: EventType;
  /** the product of a product event; null for an order's (its data says it) */
  productId: string | null;
  occurredAt: Date;
  /** the order at this version; a product event's data */
  data: Record<string, unknown>;
  /** where it stands in the feed */
  cursor: FeedCursor;
}

interface Envelope {
  specversion: '1.0';
  id: string;
  source: string;
  type: EventType;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  data: Record<string, unknown>;
}

/** An order event's envelope: its subject is the order id. */
export interface OrderCloudEvent extends Envelope {
  /** the order's version this event made (1: created); per order, never goes back */
  orderversion: number;
}

/** A product event's envelope: its subject is the producer's. */
export interface ProductCloudEvent extends Envelope {
  /** 1, 2, 3... per subject in the order published; a consumer orders a subject's events by it */
  subjectsequence: number;
  productid: string;
}

export type CloudEvent = OrderCloudEvent | ProductCloudEvent;

export function cloudEvent(event: FeedEvent): CloudEvent {
  const attributes = {
    specversion: '1.0' as const,
    id: event.id,
    source: event.source,
    type: event.type,
    subject: event.subject,
    time: event.occurredAt.toISOString(),
    datacontenttype: 'application/json' as const,
  };
  // extensions before `data`, as the order events always had them
  return event.productId === null
    ? { ...attributes, orderversion: event.sequence, data: event.data }
    : {
        ...attributes,
        subjectsequence: event.sequence,
        productid: event.productId,
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
