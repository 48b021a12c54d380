/**
 * Variables that were folded into others: each still read for one release, with a warning at
 * start, so an existing .env keeps doing what it did instead of being ignored without a word.
 */
import { z } from 'zod';

const ms = z.coerce.number().int().min(1);

export interface DeprecatedVariable {
  schema: z.ZodType<number>;
  /** what to set instead, and why the variable is gone (the warning and the docs say it) */
  instead: string;
}

export const DEPRECATED_ENV = {
  CLAIM_TTL_MS: {
    schema: ms,
    instead:
      'a spill claim is settled once its purchase has gone IDEMPOTENCY_LEASE_MS without an answer, the same wait after which its Idempotency-Key is resolved: set IDEMPOTENCY_LEASE_MS',
  },
  ROOM_SHUFFLE_SEED: {
    schema: z.coerce.number().int().min(1).max(2_147_483_646),
    instead:
      "only tests pinned the lobby's shuffle: they set the config's room.shuffleSeed; a deployment leaves it random",
  },
} satisfies Record<string, DeprecatedVariable>;

export type DeprecatedName = keyof typeof DEPRECATED_ENV;

/** The warning a deprecated variable logs at start. */
export function deprecationWarning(name: DeprecatedName): string {
  return `${name} is deprecated and read for this release only: ${DEPRECATED_ENV[name].instead}`;
}

/** The deprecated variables that were set: their values, what is wrong with them, a warning each. */
export function deprecatedValues(given: (name: string) => string | undefined) {
  const values: Partial<Record<DeprecatedName, number>> = {};
  const problems: Array<[string, string]> = [];
  const warnings: string[] = [];
  for (const name of Object.keys(DEPRECATED_ENV) as DeprecatedName[]) {
    const text = given(name);
    if (text === undefined) continue;
    warnings.push(deprecationWarning(name));
    const r = DEPRECATED_ENV[name].schema.safeParse(text);
    if (r.success) values[name] = r.data;
    else problems.push([name, r.error.issues[0]!.message]);
  }
  return { values, problems, warnings };
}
