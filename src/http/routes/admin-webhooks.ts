/**
 * The admin's webhook endpoints (behind the admin guard; docs/events.md#webhooks): register
 * (`201` with the `whsec_` secret, shown this once), list with each one's backlog, disable,
 * enable, rotate the secret, read the dead letters, replay everything after a cursor, and retry
 * now what waits for its next attempt. Each change is recorded in the audit log (who: the token
 * or session, X-Operator, the address).
 */
import type { IRouter } from 'express';
import { z } from 'zod';
import { decodeCursor, EVENT_TYPES } from '../../events/index.js';
import { ProblemError } from '../../errors.js';
import type { WebhookEndpoints } from '../../services/index.js';
import { actorOf } from './admin-audit.js';
import { parseOr400 } from '../validation.js';

export const endpointBody = z.strictObject({
  url: z
    .string()
    .max(2_048)
    .refine((s) => URL.canParse(s), 'must be a URL, e.g. https://warehouse.example/hooks')
    .describe('https, or http to a host the deployment allows'),
  events: z
    .array(z.enum(['*', ...EVENT_TYPES]))
    .min(1)
    .max(EVENT_TYPES.length + 1)
    .describe('the event types it takes; ["*"]: all of them'),
});

export const replayBody = z.strictObject({
  from: z
    .string()
    .refine(
      (s) => decodeCursor(s) !== undefined,
      'must be a cursor (GET /admin/events, a dead letter)',
    )
    .describe('every event after this cursor is delivered again (the same ids)'),
});

const deadLettersQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1_000).default(100),
});

const ENDPOINT_ID = /^ep_[A-Za-z0-9_-]{16}$/;

const unknownEndpoint = (id: string) =>
  new ProblemError({
    status: 404,
    code: 'unknown-webhook-endpoint',
    title: 'Unknown webhook endpoint',
    detail: `no webhook endpoint ${id}`,
  });

/** The endpoint id of the path, or 404 (a malformed one names no endpoint either). */
function endpointId(value: unknown): string {
  const id = String(value);
  if (!ENDPOINT_ID.test(id)) throw unknownEndpoint(id);
  return id;
}

export function mountAdminWebhooks(router: IRouter, webhooks: WebhookEndpoints): void {
  router.post('/admin/webhook-endpoints', async (req, res) => {
    const body = parseOr400(endpointBody, req.body, 'webhook endpoint');
    const r = await webhooks.register(body.url, body.events, actorOf(req));
    if (r.code === 'refused') {
      throw new ProblemError({
        status: 422,
        code: 'receiver-refused',
        title: 'Receiver URL refused',
        detail: `url: ${r.reason}`,
      });
    }
    res.status(201).location(`/admin/webhook-endpoints/${r.endpoint.id}`).json(r.endpoint);
  });

  router.get('/admin/webhook-endpoints', async (_req, res) => {
    res.json({ endpoints: await webhooks.list() });
  });

  for (const [action, status] of [
    ['disable', 'disabled'],
    ['enable', 'active'],
  ] as const) {
    router.post(`/admin/webhook-endpoints/:id/${action}`, async (req, res) => {
      const id = endpointId(req.params.id);
      const endpoint = await webhooks.setStatus(id, status, actorOf(req));
      if (!endpoint) throw unknownEndpoint(id);
      res.json(endpoint);
    });
  }

  router.post('/admin/webhook-endpoints/:id/rotate', async (req, res) => {
    const id = endpointId(req.params.id);
    const endpoint = await webhooks.rotate(id, actorOf(req));
    if (!endpoint) throw unknownEndpoint(id);
    res.json(endpoint);
  });

  router.post('/admin/webhook-endpoints/:id/replay', async (req, res) => {
    const id = endpointId(req.params.id);
    const body = parseOr400(replayBody, req.body, 'replay');
    const r = await webhooks.replay(id, decodeCursor(body.from)!, actorOf(req));
    if (!r) throw unknownEndpoint(id);
    res.status(202).json(r);
  });

  router.post('/admin/webhook-endpoints/:id/retry', async (req, res) => {
    const id = endpointId(req.params.id);
    const r = await webhooks.retry(id, actorOf(req));
    if (!r) throw unknownEndpoint(id);
    if (r.code === 'disabled') {
      throw new ProblemError({
        status: 409,
        code: 'webhook-endpoint-disabled',
        title: 'Webhook endpoint disabled',
        detail: `${id} is disabled: enable it (what waited is then sent)`,
      });
    }
    res.status(202).json({ lanes: r.lanes });
  });

  router.get('/admin/webhook-endpoints/:id/dead-letters', async (req, res) => {
    const id = endpointId(req.params.id);
    const q = parseOr400(deadLettersQuery, req.query, 'query');
    const deadLetters = await webhooks.deadLetters(id, q.limit);
    if (!deadLetters) throw unknownEndpoint(id);
    res.json({ deadLetters });
  });
}
