/**
 * The operator's controls of a drop (docs/operations.md#running-a-drop), behind the admin guard
 * (admin.ts mounts them): `POST /admin/products/:id/pause`, `/resume`, `/end`,
 * `POST /admin/products/:id/units {add} | {withdraw}`, `PATCH /admin/products/:id/waiting-room
 * {admitPerSecond?, maxActive?}`. Each is recorded in the audit log first; each answers what it
 * did and the product as it stands after.
 */
import type { IRouter, Request, Response } from 'express';
import { z } from 'zod';
import { ProblemError } from '../../errors.js';
import {
  DropRefusal,
  type DropChange,
  type DropRefusalCode,
  type ProductState,
} from '../../inventory/index.js';
import type { DropService, Products } from '../../services/index.js';
import { actorOf } from './admin-audit.js';
import { parseOr400, productIdParam } from '../validation.js';

const units = z.number().int().min(1).max(1_000_000_000);

export const unitsBody = z
  .strictObject({ add: units.optional(), withdraw: units.optional() })
  .refine((b) => (b.add === undefined) !== (b.withdraw === undefined), {
    message: 'send one of add (units to put on sale) or withdraw (unsold units to take off)',
  });

export const paceBody = z
  .strictObject({
    admitPerSecond: z.number().int().min(1).max(100_000).optional(),
    maxActive: z.number().int().min(1).max(1_000_000).optional(),
  })
  .refine((b) => b.admitPerSecond !== undefined || b.maxActive !== undefined, {
    message: 'send admitPerSecond, maxActive, or both',
  });

const REFUSALS: Record<DropRefusalCode, { status: number; title: string }> = {
  'unknown-product': { status: 404, title: 'Unknown product' },
  'sale-over': { status: 409, title: 'The sale is over' },
  'no-waiting-room': { status: 409, title: 'No waiting room' },
  'not-enough-units': { status: 409, title: 'Not that many unsold units' },
  reseeded: { status: 409, title: 'Reseeded meanwhile' },
  'control-busy': { status: 503, title: 'Another control is running, try again' },
  'segment-busy': { status: 503, title: 'A segment stayed busy, try again' },
  'segments-unreachable': { status: 503, title: 'Part of the inventory store is unavailable' },
};

function dropProblem(err: unknown): unknown {
  if (!(err instanceof DropRefusal)) return err;
  const { status, title } = REFUSALS[err.code];
  return new ProblemError({
    status,
    code: err.code,
    title,
    detail: err.message,
    cause: err,
    ...(status === 503 && { headers: { 'Retry-After': '1' } }),
  });
}

const iso = (ms: number) => (ms ? new Date(ms).toISOString() : null);

/** The product as an operator checks it after a change. */
function productAfter(state: ProductState | null) {
  return (
    state && {
      status: state.status,
      paused: state.paused,
      total: state.total,
      remaining: state.remaining,
      startsAt: iso(state.startsAt),
      endsAt: iso(state.endsAt),
      waitingRoom: state.waitingRoom,
    }
  );
}

export function mountDropControls(
  router: IRouter,
  deps: { drop: DropService; products: Products },
): void {
  const answer = async (
    req: Request,
    res: Response,
    action: string,
    run: (productId: string) => Promise<object>,
  ) => {
    const productId = productIdParam(req.params.id as string | undefined);
    let done: object;
    try {
      done = await run(productId);
    } catch (err) {
      throw dropProblem(err);
    }
    const product = productAfter(await deps.products.state(productId));
    res.json({ action, ...done, product });
  };
  for (const action of ['pause', 'resume', 'end'] as const) {
    router.post(`/admin/products/:id/${action}`, (req, res) =>
      answer(req, res, action, async (id) => {
        const actor = actorOf(req);
        const r = (await deps.drop[action](id, actor)) as DropChange & { endsAt?: number };
        return r.endsAt === undefined ? r : { ...r, endsAt: iso(r.endsAt) };
      }),
    );
  }
  router.post('/admin/products/:id/units', (req, res) => {
    const body = parseOr400(unitsBody, req.body, 'units');
    const actor = actorOf(req);
    return answer(req, res, 'units', (id) =>
      deps.drop.units(id, body.add ?? -body.withdraw!, actor),
    );
  });
  router.patch('/admin/products/:id/waiting-room', (req, res) => {
    const body = parseOr400(paceBody, req.body, 'waiting room');
    const actor = actorOf(req);
    return answer(req, res, 'waiting-room', (id) => deps.drop.pace(id, body, actor));
  });
}
