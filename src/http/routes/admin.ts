/**
 * Admin routes, behind the admin session or the ADMIN_TOKEN bearer (admin-session.ts): seed a product (`PUT /admin/products/:id`)
 * read every segment (`GET /admin/products/:id`), reconcile it
 * (`POST /admin/products/:id/reconcile`), watch the order queue (Bull Board, /admin/queues), and
 * have every API process fetch the identity provider's keys again (`POST /admin/jwks/refresh`).
 * Every change is recorded in the audit log first (admin-audit.ts: `GET /admin/audit`).
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { IRouter } from 'express';
import { z } from 'zod';
import { SaleError, unknownProduct } from '../../inventory/index.js';
import { ProblemError } from '../../errors.js';
import {
  audited,
  challengeRefusal,
  seedRefusal,
  seedRequest,
  seedSpecOf,
  type AdminAccess,
  type OrderFeed,
  type AuditStore,
  type DropService,
  type FairnessReports,
  type IdentityKeys,
  type Products,
  type WebhookEndpoints,
} from '../../services/index.js';
import { actorOf, mountAudit } from './admin-audit.js';
import { mountDropControls } from './admin-drop.js';
import { mountAdminFeed } from './admin-feed.js';
import { mountAdminJwks } from './admin-jwks.js';
import { mountAdminWebhooks } from './admin-webhooks.js';
import { adminGuard } from '../admin-session.js';
import { bullBoardPageLocal } from './bull-board-page.js';
import { saleProblem } from '../sale-problems.js';
import { parseOr400, productIdParam } from '../validation.js';

/** Where Bull Board is mounted (when the process has queues): the dashboard links to it. */
export const BULL_BOARD_PATH = '/admin/queues';

const DISCARDS = ['line', 'purchase-counts'] as const;
const seedQuery = z.strictObject({
  force: z.enum(['true', 'false']).optional(),
  discard: z
    .string()
    .refine((text) => text.split(',').every((d) => (DISCARDS as readonly string[]).includes(d)), {
      message: `a comma-separated list of ${DISCARDS.join(', ')}`,
    })
    .optional(),
});

export interface AdminRoutes {
  access: AdminAccess;
  products: Products;
  /** shown on the queue dashboard at /admin/queues */
  queues?: Queue[];
  /** SALE_TOKEN_SECRET is set: a sale may require sale tokens */
  saleTokensOn: boolean;
  /** the challenge kinds whose keys are configured (a product seeded with another is refused) */
  challengeKinds?: ReadonlySet<string> | undefined;
  /** the orders and their events, to read (GET /admin/orders, /admin/events) */
  feed: OrderFeed;
  /** every change recorded (GET /admin/audit reads it) */
  audit: AuditStore;
  /** the webhook endpoints (POST/GET /admin/webhook-endpoints, ...) */
  webhooks: WebhookEndpoints;
  /** the drop's controls: pause, resume, end, units, the room's pace */
  drop: DropService;
  /** the identity provider's keys, fetched again on demand (absent: no JWT_JWKS_URL) */
  identityKeys?: IdentityKeys | undefined;
  /** each sale's fairness report (absent: GET /admin/products/:id/fairness is a 404) */
  fairness?: FairnessReports | undefined;
}

const iso = (ms: number) => (ms ? new Date(ms).toISOString() : null);

export function mountAdmin(router: IRouter, deps: AdminRoutes): void {
  router.use('/admin', adminGuard(deps.access));

  router.put('/admin/products/:id', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const body = parseOr400(seedRequest, req.body, 'seed');
    const { force, discard } = parseOr400(seedQuery, req.query, 'query');
    const discards = discard?.split(',') ?? [];
    const refused = seedRefusal(body, deps.saleTokensOn);
    if (refused) {
      throw new ProblemError({
        status: 422,
        code: 'sale-tokens-not-configured',
        title: 'Sale tokens not configured',
        detail: refused,
      });
    }
    const unchecked = challengeRefusal(body, deps.challengeKinds ?? new Set());
    if (unchecked) {
      throw new ProblemError({
        status: 422,
        code: 'challenge-not-configured',
        title: 'Challenge not configured',
        detail: unchecked,
      });
    }
    const change = {
      actor: actorOf(req),
      action: 'seed',
      productId,
      request: { ...body, force, discard },
    };
    try {
      const r = await audited(deps.audit, change, () =>
        deps.products.seed(productId, seedSpecOf(body), {
          force: force === 'true',
          discard: {
            line: discards.includes('line'),
            purchaseCounts: discards.includes('purchase-counts'),
          },
        }),
      );
      res.status(r.epoch === 1 ? 201 : 200).json(r);
    } catch (err) {
      throw err instanceof SaleError ? saleProblem(err) : err;
    }
  });

  mountAudit(router, deps);
  mountDropControls(router, deps);
  mountAdminJwks(router, deps);

  router.get('/admin/products/:id', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const view = await deps.products.adminView(productId);
    if (!view) throw saleProblem(unknownProduct(productId));
    res.json({ ...view, startsAt: iso(view.startsAt), endsAt: iso(view.endsAt) });
  });

  router.post('/admin/products/:id/reconcile', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const report = await deps.products.reconcile(productId);
    if (!report) throw saleProblem(unknownProduct(productId));
    res.json(report);
  });

  router.get('/admin/products/:id/fairness', async (req, res) => {
    const productId = productIdParam(req.params.id);
    const report = await deps.fairness?.report(productId);
    if (!report) throw saleProblem(unknownProduct(productId));
    res.set('Cache-Control', 'no-store').json(report);
  });

  mountAdminFeed(router, deps.feed);
  mountAdminWebhooks(router, deps.webhooks);

  if (deps.queues?.length) {
    const board = new ExpressAdapter();
    board.setBasePath(BULL_BOARD_PATH);
    createBullBoard({ queues: deps.queues.map((q) => new BullMQAdapter(q)), serverAdapter: board });
    router.use(BULL_BOARD_PATH, bullBoardPageLocal, board.getRouter());
  }
}
