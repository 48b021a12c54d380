/**
 * What a valid seed is, for every entry point (the admin API and `seckill seed`): the request
 * schema and its translation into the inventory's seed spec.
 */
import { z } from 'zod';
import type { SeedSpec } from '../../inventory/index.js';
import { priceSchema } from '../orders/index.js';

/** Defaults when `segments` is left out: the baseline has one; the others spread over 16. */
export const DEFAULT_SEGMENTS = { global: 1, segmented: 16, lockfree: 16 } as const;

/** A week: a window longer than that is a mistake, not a flash sale. */
const MAX_PAY_WINDOW_S = 7 * 86_400;

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
  })
  .refine((b) => b.strategy !== 'global' || (b.segments ?? 1) === 1, {
    path: ['segments'],
    message: 'the global strategy is one segment behind one lock: leave segments out or set 1',
  })
  .refine((b) => !b.startsAt || !b.endsAt || Date.parse(b.endsAt) > Date.parse(b.startsAt), {
    path: ['endsAt'],
    message: 'must be after startsAt',
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
  };
}

/**
 * Why `request` cannot be seeded here, if it cannot: a sale that needs sale tokens where no API
 * process can issue them (every purchase would be refused `503 sale-tokens-disabled`).
 * @param saleTokensOn - SALE_TOKEN_SECRET is set
 */
export function seedRefusal(request: SeedRequest, saleTokensOn: boolean): string | undefined {
  if ((!request.requireSaleToken && !request.waitingRoom) || saleTokensOn) return undefined;
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
