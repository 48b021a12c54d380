/**
 * The purchase body's hand-written check (seckill.ts, in front of the schema for speed) never
 * decides otherwise than the schema: every body the schema refuses is refused with the schema's
 * 400, every body it accepts comes out with the schema's fields.
 */
import { describe, expect, it } from 'vitest';
import { ProblemError } from '../../src/errors.js';
import { parsePurchase, purchaseBody } from '../../src/http/handlers/seckill.js';

const auth = { mode: 'dev' } as Parameters<typeof parsePurchase>[1];

const bodies: unknown[] = [
  { productId: 'p1' },
  { productId: 'p1', quantity: 1 },
  { productId: 'p1', quantity: 1000 },
  { productId: 'p1', quantity: 1001 },
  { productId: 'p1', quantity: 0 },
  { productId: 'p1', quantity: -1 },
  { productId: 'p1', quantity: 1.5 },
  { productId: 'p1', quantity: '1' },
  { productId: 'p1', quantity: null },
  { productId: 'p1', userId: 'u-1' },
  { productId: 'p1', userId: 'bad user!' },
  { productId: 'p1', userId: 5 },
  { productId: 'p1', userId: 'u'.repeat(129) },
  { productId: 'p'.repeat(128) },
  { productId: 'p'.repeat(129) },
  { productId: '' },
  { productId: 'a{b}' },
  { productId: 5 },
  { productId: null },
  {},
  { productId: 'p1', extra: 1 },
  JSON.parse('{"productId":"p1","__proto__":{"quantity":2}}'),
  JSON.parse('{"productId":"p1","constructor":1}'),
  [],
  ['p1'],
  'p1',
  7,
  null,
];

describe('the purchase body check', () => {
  for (const body of bodies) {
    it(`decides ${JSON.stringify(body)} as the schema does`, () => {
      const schema = purchaseBody.safeParse(body);
      let parsed: unknown;
      let refused: ProblemError | undefined;
      try {
        parsed = parsePurchase({ body, headers: {} }, auth).body;
      } catch (err) {
        if (!(err instanceof ProblemError)) throw err;
        refused = err;
      }
      if (schema.success) {
        expect(refused).toBeUndefined();
        expect(parsed).toEqual(schema.data);
      } else {
        expect(refused?.status).toBe(400);
        expect(refused?.code).toBe('invalid-request');
      }
    });
  }
});
