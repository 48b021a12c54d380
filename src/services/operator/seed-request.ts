/**
 * What a valid seed is, for every entry point (the admin API and `seckill seed`): the request
 * schema and its translation into the inventory's seed spec.
 */
import { z } from 'zod';
import type { SeedSpec } from '../../inventory/index.js';
import { ID_PATTERN } from '../../ids.js';
import { priceSchema } from '../orders/index.js';

/** Defaults when `segments` is left out: the baseline has one; the others spread over 16. */
export const DEFAULT_SEGMENTS = { global: 1, segmented: 16, lockfree: 16 } as const;

/** A week: a window longer than that is a mistake, not a flash sale. */
const MAX_PAY_WINDOW_S = 7 * 86_400;

/** Bounds of a draw's settings: a window of at most 30 days, a winner's turn up to a day. */
const MAX_DRAW_WINDOW_MS = 30 * 86_400_000;

const drawSchema = z
  .strictObject({
    entriesOpenAt: z.iso.datetime({ offset: true }),
    entriesCloseAt: z.iso.datetime({ offset: true }),
    /** how long a winner (and each rank the cascade reaches) has to buy */
    buyWithinSeconds: z.number().int().min(5).max(86_400),
    /** screening: entries kept per client address block (IPv4 /24, IPv6 /64) */
    maxEntriesPerAddressBlock: z.number().int().min(1).max(1_000_000).optional(),
    /** screening: shopper identities refused at the freeze */
    denyList: z.array(z.string().regex(ID_PATTERN)).max(100_000).optional(),
  })
  .refine((d) => Date.parse(d.entriesCloseAt) > Date.parse(d.entriesOpenAt), {
    path: ['entriesCloseAt'],
    message: 'must be after entriesOpenAt',
  })
  .refine((d) => Date.parse(d.entriesCloseAt) - Date.parse(d.entriesOpenAt) <= MAX_DRAW_WINDOW_MS, {
    path: ['entriesCloseAt'],
    message: 'an entry window lasts 30 days at most',
  })
  .refine((d) => Date.parse(d.entriesCloseAt) > Date.now(), {
    path: ['entriesCloseAt'],
    message: 'must be in the future: a draw closed before its seed takes no entry',
  });

/**
 * The product's own challenge at the door (docs/fairness.md); null turns the door off for it; left
 * out, the deployment's (CHALLENGE). The providers' keys are configuration, never a seed's.
 */
const challengeSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('pow'),
    /** the clean floor between the issue and the answer (default CHALLENGE_CLEAN_FLOOR_MS) */
    floorMs: z.number().int().min(0).max(1_500).optional(),
  }),
  z.strictObject({ kind: z.literal('turnstile') }),
  z.strictObject({ kind: z.literal('hcaptcha') }),
]);

export const seedRequest = z
  .strictObject({
    total: z.number().int().min(0).max(1_000_000_000),
    segments: z.number().int().min(1).max(1024).optional(),
    strategy: z.enum(['global', 'segmented', 'lockfree']),
    startsAt: z.iso.datetime({ offset: true }).optional(),
    endsAt: z.iso.datetime({ offset: true }).optional(),
    limitPerUser: z.number().int().min(1).max(1_000).optional(),
    /** buyers have this long to pay, or the units go back on sale; left out: sales are final */
    payWithinSeconds: z.number().int().min(1).max(MAX_PAY_WINDOW_S).optional(),
    /** purchases need a sale token from POST /products/:id/sale-token */
    requireSaleToken: z.boolean().optional(),
    /** purchases need a place in line: docs/waiting-room.md */
    waitingRoom: z
      .strictObject({
        admitPerSecond: z.number().int().min(1).max(100_000),
        maxActive: z.number().int().min(1).max(1_000_000),
        admittedForSeconds: z.number().int().min(5).max(3_600),
      })
      .optional(),
    /** the unit price of this sale's orders (each order copies it as it is sold) */
    price: priceSchema.optional(),
    /** sold by a draw, not first come: docs/draw.md */
    draw: drawSchema.optional(),
    /** the door's challenge for this product; null: none; left out: the deployment's */
    challenge: challengeSchema.nullable().optional(),
  })
  .refine((b) => b.strategy !== 'global' || (b.segments ?? 1) === 1, {
    path: ['segments'],
    message: 'the global strategy is one segment behind one lock: leave segments out or set 1',
  })
  .refine((b) => !b.startsAt || !b.endsAt || Date.parse(b.endsAt) > Date.parse(b.startsAt), {
    path: ['endsAt'],
    message: 'must be after startsAt',
  })
  .refine((b) => !b.draw || !b.waitingRoom, {
    path: ['draw'],
    message: 'a draw is its own line (its waitlist): leave waitingRoom out',
  })
  .refine(
    (b) => !b.draw || !b.startsAt || Date.parse(b.startsAt) <= Date.parse(b.draw.entriesCloseAt),
    {
      path: ['startsAt'],
      message: "a draw's winners buy from its close: startsAt at or before draw.entriesCloseAt",
    },
  )
  .refine((b) => !b.draw || !b.endsAt || Date.parse(b.endsAt) > Date.parse(b.draw.entriesCloseAt), {
    path: ['endsAt'],
    message: "must be after the draw's entriesCloseAt",
  });

export type SeedRequest = z.output<typeof seedRequest>;

export function seedSpecOf(request: SeedRequest): SeedSpec {
  return {
    total: request.total,
    segments: request.segments ?? DEFAULT_SEGMENTS[request.strategy],
    strategy: request.strategy,
    startsAt: request.startsAt ? new Date(request.startsAt) : undefined,
    endsAt: request.endsAt ? new Date(request.endsAt) : undefined,
    limitPerUser: request.limitPerUser,
    payWithinSeconds: request.payWithinSeconds,
    requireSaleToken: request.requireSaleToken,
    waitingRoom: request.waitingRoom,
    price: request.price,
    draw: request.draw && {
      entriesOpenAt: new Date(request.draw.entriesOpenAt),
      entriesCloseAt: new Date(request.draw.entriesCloseAt),
      buyWithinSeconds: request.draw.buyWithinSeconds,
      rules: {
        maxEntriesPerAddressBlock: request.draw.maxEntriesPerAddressBlock ?? null,
        denyList: request.draw.denyList ?? [],
      },
    },
    challenge: request.challenge,
    // a draw's winners buy from its close on
    ...(request.draw && !request.startsAt && { startsAt: new Date(request.draw.entriesCloseAt) }),
  };
}

/**
 * Why `request` cannot be seeded here, if it cannot: a sale that needs sale tokens where no API
 * process can issue them (every purchase would be refused `503 sale-tokens-disabled`).
 * @param saleTokensOn - SALE_TOKEN_SECRET is set
 */
export function seedRefusal(request: SeedRequest, saleTokensOn: boolean): string | undefined {
  if ((!request.requireSaleToken && !request.waitingRoom && !request.draw) || saleTokensOn) {
    return undefined;
  }
  if (request.draw) {
    return (
      "draw: a winner's purchase right is a sale token and this deployment issues none " +
      '(SALE_TOKEN_SECRET is not set): set it on the API processes, or seed without draw'
    );
  }
  if (request.waitingRoom) {
    return (
      'waitingRoom: admission is a sale token and this deployment issues none ' +
      '(SALE_TOKEN_SECRET is not set): set it on the API processes, or seed without waitingRoom'
    );
  }
  return (
    'requireSaleToken: this deployment issues no sale tokens (SALE_TOKEN_SECRET is not set): ' +
    'set it on the API processes, or seed without requireSaleToken'
  );
}

/**
 * Why `request`'s challenge cannot be checked here, if it cannot: a kind whose key this
 * deployment lacks (every join and sale token would be refused `503 challenge-unverified`).
 * @param configured - the kinds whose keys are configured
 */
export function challengeRefusal(
  request: SeedRequest,
  configured: ReadonlySet<string>,
): string | undefined {
  const kind = request.challenge?.kind;
  if (!kind || configured.has(kind)) return undefined;
  const key = kind === 'pow' ? 'CHALLENGE_POW_SECRET' : `CHALLENGE_${kind.toUpperCase()}_SECRET`;
  return `challenge: this deployment has no key for ${kind} (${key}, or CHALLENGE=${kind} with CHALLENGE_SECRET): set it on the API processes, or seed another kind`;
}
