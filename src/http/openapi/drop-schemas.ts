/**
 * The answers of the drop's operator routes (the audit log, the controls) as zod schemas: part of
 * the OpenAPI document (components.ts), checked against real answers by the tests.
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
  next: z
    .string()
    .nullable()
    .describe(
      'an opaque cursor: pass it as `after` for the next (older) page; null on the last one',
    ),
});

const roomSettings = z.strictObject({
  admitPerSecond: z.number().int(),
  maxActive: z.number().int(),
  admittedForSeconds: z.number().int(),
});

/** What a drop control did, and the product as it stands after. */
export const dropResult = z.strictObject({
  action: z.enum(['pause', 'resume', 'end', 'units', 'waiting-room']),
  productId: z.string(),
  epoch: z.number().int().describe('the sale acted on: controls never start a new one'),
  changed: z
    .boolean()
    .describe(
      'false: it already was so (a second pause; every segment is written again all the same)',
    ),
  endsAt: iso.optional().describe('end: when the sale ended (Redis time)'),
  asked: z.number().int().optional().describe('units: > 0 asked on sale, < 0 asked off'),
  units: z
    .number()
    .int()
    .optional()
    .describe('units: what was done (a withdrawal takes less if units sold meanwhile)'),
  waitingRoom: roomSettings.optional().describe('waiting-room: the settings now'),
  product: z
    .strictObject({
      status: z.enum(['upcoming', 'live', 'paused', 'sold out', 'ended']),
      paused: z.boolean(),
      total: z.number().int(),
      remaining: z.number().int(),
      startsAt: iso.nullable(),
      endsAt: iso.nullable(),
      waitingRoom: roomSettings.nullable(),
    })
    .nullable(),
});
