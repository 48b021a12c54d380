/** zod at the edge: a failed parse becomes a 400 problem listing every issue. */
import type { z } from 'zod';
import { ProblemError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';

export function parseOr400<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const errors = r.error.issues.map((i) => ({
    path: i.path.join('.') || '(root)',
    message: i.message,
  }));
  throw new ProblemError({
    status: 400,
    code: 'invalid-request',
    title: `Invalid ${what}`,
    detail: errors.map((e) => `${e.path}: ${e.message}`).join('; '),
    extensions: { errors },
  });
}

/** A product id from the path. @throws ProblemError 400 */
export function productIdParam(value: string | undefined): string {
  if (value === undefined || !ID_PATTERN.test(value)) {
    throw new ProblemError({
      status: 400,
      code: 'invalid-product-id',
      title: 'Invalid product id',
      detail: `a product id must match ${ID_PATTERN}`,
    });
  }
  return value;
}
