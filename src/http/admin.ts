/**
 * Admin routes, behind the ADMIN_TOKEN bearer check: seed a product (`PUT /admin/products/:id`)
 * read every segment (`GET /admin/products/:id`), reconcile it
 * (`POST /admin/products/:id/reconcile`), and watch the order queue (Bull Board, /admin/queues).
 */
import { Router, type RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import type { Db } from '../db/index.js';
import {
  readProductState,
  SaleError,
  saleProblem,
  unknownProduct,
  seedProduct,
  type Catalog,
} from '../inventory/index.js';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import { persistedBySegment, reconcile } from '../orders/index.js';
import type { Keys } from '../redis/keys.js';
import { requireAdmin } from './auth.js';
import { parseOr400, productIdParam } from './validation.js';

/** Defaults when `segments` is left out: the baseline has one; the others spread over 16. */
const DEFAULT_SEGMENTS = { global: 1, segmented: 16, lockfree: 16 } as const;

export const seedBody = z
  .strictObject({
    total: z.number().int().min(0).max(1_000_000_000),
    segments: z.number().int().min(1).max(1024).optional(),
    strategy: z.enum(['global', 'segmented', 'lockfree']),
    startsAt: z.iso.datetime({ offset: true }).optional(),
    endsAt: z.iso.datetime({ offset: true }).optional(),
    limitPerUser: z.number().int().min(1).max(1_000).optional(),
  })
  .refine((b) => b.strategy !== 'global' || (b.segments ?? 1) === 1, {
    path: ['segments'],
    message: 'the global strategy is one segment behind one lock: leave segments out or set 1',
  })
  .refine((b) => !b.startsAt || !b.endsAt || Date.parse(b.endsAt) > Date.parse(b.startsAt), {
    path: ['endsAt'],
    message: 'must be after startsAt',
  });

const forceQuery = z.strictObject({ force: z.enum(['true', 'false']).optional() });

export interface AdminDeps {
  config: Config;
  redis: Redis;
  keys: Keys;
  db: Db;
  catalog: Catalog;
  /** shown on the queue dashboard at /admin/queues */
  queues?: Queue[];
}

export function adminGuard(config: Config): RequestHandler {
  return (req, _res, next) => {
    requireAdmin(req, config.auth.adminToken);
    next();
  };
}

export function adminRouter(d: AdminDeps): Router {
  const router = Router();
  router.use('/admin', adminGuard(d.config));

  router.put('/admin/products/:id', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const body = parseOr400(seedBody, req.body, 'seed');
    const { force } = parseOr400(forceQuery, req.query, 'query');
    try {
      const r = await seedProduct(
        d,
        productId,
        {
          total: body.total,
          segments: body.segments ?? DEFAULT_SEGMENTS[body.strategy],
          strategy: body.strategy,
          startsAt: body.startsAt ? new Date(body.startsAt) : undefined,
          endsAt: body.endsAt ? new Date(body.endsAt) : undefined,
          limitPerUser: body.limitPerUser,
        },
        { force: force === 'true' },
      );
      res.status(r.epoch === 1 ? 201 : 200).json(r);
    } catch (err) {
      throw err instanceof SaleError ? saleProblem(err) : err;
    }
  });

  router.get('/admin/products/:id', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const s = await readProductState(d, productId);
    if (!s) {
      throw saleProblem(unknownProduct(productId));
    }
    const persisted = await persistedBySegment(d.db, productId, s.epoch);
    res.json({
      ...s,
      segments: s.segments.map((seg) => ({ ...seg, persisted: persisted.get(seg.segment) ?? 0 })),
      startsAt: s.startsAt ? new Date(s.startsAt).toISOString() : null,
      endsAt: s.endsAt ? new Date(s.endsAt).toISOString() : null,
    });
  });

  router.post('/admin/products/:id/reconcile', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const report = await reconcile(d, productId);
    if (!report) {
      throw saleProblem(unknownProduct(productId));
    }
    res.json(report);
  });

  if (d.queues?.length) {
    const board = new ExpressAdapter();
    board.setBasePath('/admin/queues');
    createBullBoard({ queues: d.queues.map((q) => new BullMQAdapter(q)), serverAdapter: board });
    router.use('/admin/queues', board.getRouter());
  }

  return router;
}
