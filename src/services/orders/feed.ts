/**
 * What the rest of the shop reads (pull): the orders, filtered, a keyset page at a time (an
 * export, a back-office screen), and the events (the orders', and the products' of the features
 * that publish them) in commit order from any cursor within their retention (a consumer that
 * cannot take webhooks tails it).
 */
import {
  cloudEvent,
  compareCursors,
  encodeCursor,
  FEED_START,
  type CloudEvent,
  type FeedCursor,
  type FeedEvent,
} from '../../events/index.js';
import type { OrderFilter, OrderRow } from '../../orders/index.js';
import { rowView, type OrderView } from './order-view.js';

/** The SQL behind the feed: the events repository and the orders repository. */
export interface FeedSources {
  events: {
    eventsAfter(cursor: FeedCursor, limit: number): Promise<FeedEvent[]>;
    prunedThrough(): Promise<FeedCursor | undefined>;
  };
  orders: {
    listOrders(filter: OrderFilter, after: string | undefined, limit: number): Promise<OrderRow[]>;
  };
}

/** Largest page either listing answers. */
export const MAX_PAGE = 1_000;

export type EventPage =
  | { code: 'ok'; events: CloudEvent[]; next: string }
  /** the cursor is older than what pruning kept: events after it may be gone */
  | { code: 'cursor-expired'; oldest: string };

export interface OrderPage {
  orders: OrderView[];
  /** the cursor of the next page; null on the last one */
  next: string | null;
}

export class OrderFeed {
  constructor(private readonly sources: FeedSources) {}

  /** Events after `after` (from the oldest kept when left out), in commit order. */
  async events(after: FeedCursor | undefined, limit: number): Promise<EventPage> {
    const pruned = await this.sources.events.prunedThrough();
    const from = after ?? pruned ?? FEED_START;
    if (pruned && compareCursors(from, pruned) < 0) {
      return { code: 'cursor-expired', oldest: encodeCursor(pruned) };
    }
    const events = await this.sources.events.eventsAfter(from, Math.min(limit, MAX_PAGE));
    const last = events.at(-1)?.cursor ?? from;
    return { code: 'ok', events: events.map(cloudEvent), next: encodeCursor(last) };
  }

  /** A page of orders after the order id `after`, by id. */
  async orders(filter: OrderFilter, after: string | undefined, limit: number): Promise<OrderPage> {
    const size = Math.min(limit, MAX_PAGE);
    const rows = await this.sources.orders.listOrders(filter, after, size);
    return { orders: rows.map(rowView), next: rows.length === size ? rows.at(-1)!.id : null };
  }

  /** Every order matching `filter`, page after page (the export). */
  async *allOrders(filter: OrderFilter, pageSize = MAX_PAGE): AsyncGenerator<OrderView> {
    let after: string | undefined;
    for (;;) {
      const page = await this.orders(filter, after, pageSize);
      yield* page.orders;
      if (page.next === null) return;
      after = page.next;
    }
  }
}
