/**
 * Who an admin request is, for the audit log (services/operator/audit-log.ts), and `GET /admin/audit`:
 * the log, newest first, paged as every listing is (next-page.ts: `next` passed back as `after`,
 * and a `Link` header). Behind the admin guard (admin.ts mounts it first).
 */
import type { IRouter, Request } from 'express';
import { z } from 'zod';
import { ProblemError } from '../../errors.js';
import { ID_PATTERN } from '../../ids.js';
import type { AuditActor, AuditStore } from '../../services/index.js';
import { sessionCookie } from '../admin-session.js';
import { bearer } from '../auth.js';
import { parseOr400 } from '../validation.js';
import { linkNext } from './next-page.js';

/** A name an operator gives: letters, digits, spaces and . _ @ -, at most 64. */
export const OPERATOR = /^[\p{L}\p{N} ._@-]{1,64}$/u;

/**
 * The request's admin, as the guard let it in: the bearer token, or a dashboard session (its
 * id's first 8 characters: enough to tell sessions apart, not to use one), with the name it
 * declares in X-Operator and its address.
 * @throws ProblemError 400 an X-Operator that is not a name
 */
export function actorOf(req: Request): AuditActor {
  const operator = req.headers['x-operator'];
  if (operator !== undefined && (typeof operator !== 'string' || !OPERATOR.test(operator))) {
    throw new ProblemError({
      status: 400,
      code: 'invalid-request',
      title: 'Invalid X-Operator',
      detail: 'X-Operator names who acts: 1-64 letters, digits, spaces and . _ @ -',
    });
  }
  const session = bearer(req) === undefined ? sessionCookie(req)?.split('.')[1] : undefined;
  return {
    via: session === undefined ? 'token' : 'session',
    ...(session !== undefined && { session: session.slice(0, 8) }),
    ...(operator !== undefined && { operator }),
    address: req.ip ?? '',
  };
}

const entryId = z
  .string()
  .regex(/^[1-9]\d{0,18}$/, 'must be a cursor: the `next` of the page before');

export const auditQuery = z
  .strictObject({
    productId: z.string().regex(ID_PATTERN, `must match ${ID_PATTERN}`).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    after: entryId.optional(),
    /** the cursor's name before `after` (0.2.0), kept for one release */
    before: entryId.optional(),
  })
  .refine((q) => q.after === undefined || q.before === undefined, {
    message: 'send after (the `next` of the page before), not both after and before',
  });

export function mountAudit(router: IRouter, deps: { audit: AuditStore }): void {
  router.get('/admin/audit', async (req, res) => {
    const { before, ...q } = parseOr400(auditQuery, req.query, 'query');
    const entries = await deps.audit.list({
      productId: q.productId,
      limit: q.limit,
      beforeId: q.after ?? before,
    });
    const last = entries.at(-1);
    const next = entries.length === q.limit && last ? last.id : null;
    res.json({ entries, next: linkNext(res, '/admin/audit', q, next) });
  });
}
