/** The draw's answers (docs/draw.md), part of the document's schemas (components.ts). */
import { z } from 'zod';

const iso = z.iso.datetime({ offset: true });
const hex = z.string().regex(/^[0-9a-f]+$/);

export const drawEntry = z.strictObject({
  entryId: z.string().describe('the entry, as the frozen list and the transcript name it'),
  state: z.literal('entered'),
  entriesCloseAt: iso.describe('entries are taken, and withdrawn, until then'),
});

export const drawWithdrawn = z.strictObject({
  entryId: z.string(),
  state: z.literal('withdrawn'),
});

export const drawEntryView = z.strictObject({
  entryId: z.string(),
  state: z
    .enum(['entered', 'won', 'waitlisted', 'expired', 'not-drawn'])
    .describe(
      'won: a purchase right (saleToken); waitlisted: at `position`; expired: the right ran out unused; not-drawn: every unit went to ranks before this one, or the screening removed the entry',
    ),
  rank: z.number().int().min(1).nullable().describe('1 = drawn first; null until drawn'),
  position: z
    .number()
    .int()
    .min(1)
    .nullable()
    .describe('waitlisted: ranks ahead still to be passed (1 = the next unit back is yours)'),
  proof: z
    .strictObject({
      index: z.number().int().min(0),
      size: z.number().int().min(1),
      root: hex,
      path: z.array(hex),
    })
    .nullable()
    .describe(
      'from the freeze: the entry is leaf `index` of the Merkle tree (RFC 6962) of the frozen list of `size` entries under `root` (verify as RFC 9162 2.1.3.2)',
    ),
  entriesCloseAt: iso,
  drawAt: iso.nullable().describe('from the freeze: when the beacon round that draws it is due'),
  saleToken: z.string().optional().describe('won: send it as Sale-Token on POST /seckill'),
  saleTokenExpiresAt: iso.optional(),
  pollAfterSeconds: z.number().int().min(1).nullable(),
  detail: z.string().optional(),
});

export const drawTranscript = z.strictObject({
  productId: z.string(),
  epoch: z.number().int().min(1),
  state: z.enum(['upcoming', 'open', 'closed', 'frozen', 'drawn']),
  entriesOpenAt: iso,
  entriesCloseAt: iso,
  entries: z
    .number()
    .int()
    .min(0)
    .describe('the frozen list (before the freeze: entries held now)'),
  root: hex.nullable().describe("the frozen list's RFC 6962 Merkle root over the sorted entry ids"),
  rulesHash: hex.nullable().describe("SHA-256 of the screening rules' canonical JSON"),
  removed: z.number().int().min(0).nullable().describe('entries the screening removed'),
  chain: z
    .looseObject({ hash: z.string(), public_key: z.string(), schemeID: z.string() })
    .describe("the beacon chain's drand info: its hash, public key, scheme, period, genesis"),
  round: z.number().int().min(1).nullable().describe('the beacon round that draws it'),
  roundAt: iso.nullable(),
  beacon: z
    .strictObject({ round: z.number().int().min(1), randomness: hex, signature: hex })
    .nullable(),
  frozenAt: iso.nullable(),
  drawnAt: iso.nullable(),
  units: z.number().int().min(0).nullable(),
  limitPerUser: z.number().int().min(1).describe('ceil(units / limitPerUser) ranks win'),
  winners: z.array(z.string()).describe('entry ids, in rank order'),
  waitlist: z.array(z.string()).describe('entry ids, in rank order'),
  offered: z.number().int().min(0).describe('ranks given a purchase right so far'),
  bought: z.array(z.string()).describe('entry ids whose order stands, in rank order'),
  cascade: z
    .enum(['running', 'paused', 'ended'])
    .nullable()
    .describe(
      "drawn: `running`, `paused` by an operator, or `ended` (the sale's end: no rank is offered a unit any more)",
    ),
});

export const drawEntriesPage = z.strictObject({
  entries: z.array(z.string()).describe('entry ids in the frozen order (UTF-8 byte order)'),
  next: z.string().nullable(),
  total: z.number().int().min(0),
});
