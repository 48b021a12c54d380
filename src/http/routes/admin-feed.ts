/**
 * The admin's pull side (behind the admin guard): `GET /admin/orders` (filters and a keyset
 * cursor: an export or a back-office screen) and `GET /admin/events` (the order events in
 * commit order from a cursor: a consumer that cannot take webhooks tails it). Both page as every
 * listing does (next-page.ts): `next` passed back as `after`, and a `Link` header.
 */
import type { IRouter } from 'express';
import { z } from 'zod';
import { decodeCursor } from '../../events/index.js';
import { ProblemError } from '../../errors.js';
import { ID_PATTERN } from '../../ids.js';
import { ROW_STATUS, type OrderFeed } from '../../services/index.js';
import { UUID } from './orders.js';
import { parseOr400 } from '../validation.js';
import { linkNext } from './next-page.js';

const limit = z.coerce.number().int().min(1).max(1_000).default(100);

export const ordersQuery = z.strictObject({
  product: z.string().regex(ID_PATTERN, 'must be a product id').optional(),
  status: z.enum(Object.keys(ROW_STATUS) as [keyof typeof ROW_STATUS]).optional(),
  updatedSince: z.iso.datetime({ offset: true }).optional(),
  after: z.string().regex(UUID, 'must be a cursor: the `next` of the page before').optional(),
  limit,
});

export const eventsQuery = z.strictObject({
  after: z
    .string()
    .refine((s) => decodeCursor(s) !== undefined, 'must be a cursor: the `next` of a page')
    .optional(),
  limit,
});

export function mountAdminFeed(router: IRouter, feed: OrderFeed): void {
  router.get('/admin/orders', async (req, res) => {
    const q = parseOr400(ordersQuery, req.query, 'query');
    const filter = {
      productId: q.product,
      status: q.status && ROW_STATUS[q.status],
      updatedSince: q.updatedSince ? new Date(q.updatedSince) : undefined,
    };
    const page = await feed.orders(filter, q.after?.toLowerCase(), q.limit);
    res.json({ orders: page.orders, next: linkNext(res, '/admin/orders', q, page.next) });
  });

  router.get('/admin/events', async (req, res) => {
    const q = parseOr400(eventsQuery, req.query, 'query');
    const page = await feed.events(q.after ? decodeCursor(q.after) : undefined, q.limit);
    if (page.code === 'cursor-expired') {
      throw new ProblemError({
        status: 410,
        code: 'cursor-expired',
        title: 'Cursor past the retention',
        detail: `events older than EVENT_RETENTION_HOURS were pruned; the oldest cursor kept is ${page.oldest}`,
        extensions: { oldest: page.oldest },
      });
    }
    res.json({ events: page.events, next: linkNext(res, '/admin/events', q, page.next) });
  });
}
