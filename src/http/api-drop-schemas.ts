/**
 * The answers of the drop's operator routes (the audit log, the controls) as zod schemas: part of
 * the OpenAPI document (api-components.ts), checked against real answers by the tests.
 */
import { z } from 'zod';

const iso = z.iso.datetime({ offset: true });

export const auditEntry = z.strictObject({
  id: z.string().describe('increasing: newer entries have larger ids'),
  at: iso,
  actor: z.strictObject({
    via: z.enum(['token', 'session', 'cli']),
    session: z
      .string()
      .optional()
      .describe("a dashboard session's id prefix, or the CLI's OS user"),
    operator: z.string().optional().describe('the name the operator gave (X-Operator): declared'),
    address: z.string().optional(),
  }),
  action: z.string().describe('seed, pause, resume, end, units, waiting-room'),
  productId: z.string().nullable(),
  epoch: z.number().int().nullable().describe('the sale the change acted on'),
  request: z.unknown().describe('what was asked'),
  outcome: z
    .enum(['started', 'done', 'refused', 'failed'])
    .describe('started: the change began and its end was not recorded (its process died)'),
  result: z.unknown().describe('what it did, or why it did not'),
  finishedAt: iso.nullable(),
});

export const auditPage = z.strictObject({
  entries: z.array(auditEntry).describe('newest first'),
  next: z.string().nullable().describe('the next (older) page, when there may be one'),
});
