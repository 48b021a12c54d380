/**
 * The variables of the door (docs/fairness.md): the challenge a join or a sale token needs, and
 * the fairness rules' threshold. Part of env.ts's schema, among the admission variables.
 */
import { z } from 'zod';

export const doorEnv = {
  CHALLENGE: z
    .enum(['off', 'pow', 'turnstile', 'hcaptcha'])
    .default('off')
    .describe(
      'a challenge at the door (docs/fairness.md): waiting-room joins and sale tokens need a solved one; off: none',
    ),
  CHALLENGE_PRODUCTS: z
    .string()
    .regex(/^[\w.:-]+(,[\w.:-]+)*$/, 'product ids, comma-separated')
    .optional()
    .describe('the products whose door asks the challenge (default: every product)'),
  CHALLENGE_SECRET: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      "pow: the HMAC key of the challenges; turnstile, hcaptcha: the provider's secret key",
    ),
  CHALLENGE_SITE_KEY: z
    .string()
    .optional()
    .describe("turnstile, hcaptcha: the widget's site key, handed to the page"),
  CHALLENGE_VERIFY_URL: z
    .string()
    .url()
    .optional()
    .describe(
      "turnstile, hcaptcha: the siteverify endpoint (default: the provider's documented one)",
    ),
  CHALLENGE_TTL_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(3_600)
    .default(120)
    .describe('a challenge must be answered within this long of its issue'),
  CHALLENGE_CLEAN_FLOOR_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_500)
    .default(1_000)
    .describe(
      'pow: time between the issue and the answer for an identity and address never flagged',
    ),
  CHALLENGE_FLAGGED_FLOOR_MS: z.coerce
    .number()
    .int()
    .min(15_000)
    .max(600_000)
    .default(15_000)
    .describe(
      'pow: the floor once flagged (doubling with each further flag, up to 4x); also the gap between two challenges of one flagged address',
    ),
  CHALLENGE_POW_SECRET: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'pow: the HMAC key of the proofs of work of products seeded with their own pow challenge, at least 16 characters; `up` keeps one in `DATA_DIR/challenge-pow-secret`',
    ),
  CHALLENGE_TURNSTILE_SECRET: z
    .string()
    .optional()
    .describe(
      "turnstile: the provider's secret key for products seeded with a turnstile challenge (default: CHALLENGE_SECRET, while CHALLENGE is turnstile)",
    ),
  CHALLENGE_TURNSTILE_SITE_KEY: z
    .string()
    .optional()
    .describe(
      "turnstile: the widget's site key for those products (default: CHALLENGE_SITE_KEY, while CHALLENGE is turnstile)",
    ),
  CHALLENGE_HCAPTCHA_SECRET: z
    .string()
    .optional()
    .describe(
      "hcaptcha: the provider's secret key for products seeded with an hcaptcha challenge (default: CHALLENGE_SECRET, while CHALLENGE is hcaptcha)",
    ),
  CHALLENGE_HCAPTCHA_SITE_KEY: z
    .string()
    .optional()
    .describe(
      "hcaptcha: the widget's site key for those products (default: CHALLENGE_SITE_KEY, while CHALLENGE is hcaptcha)",
    ),
  FAIRNESS_IDENTITIES_PER_BLOCK: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(3)
    .describe(
      'identities from one address block (IPv4 /24, IPv6 /48) past which each of them is flagged',
    ),
  FAIRNESS_BURST_IDENTITIES: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(5)
    .describe(
      'identities first seen from one address (and, apart, from one address block) within FAIRNESS_BURST_WINDOW_S past which each of that burst is flagged',
    ),
  FAIRNESS_BURST_WINDOW_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(86_400)
    .default(10)
    .describe('the window of the burst rules, in seconds'),
  FAIRNESS_ACCOUNT_AGE_CLAIM: z
    .string()
    .regex(/^[A-Za-z_][\w.:-]{0,63}$/, 'a claim name')
    .optional()
    .describe(
      "the claim of the shop's JWT that holds when the shopper's account was made (a NumericDate, or an ISO 8601 date); unset: accounts' ages are not judged",
    ),
  FAIRNESS_ACCOUNT_MIN_AGE_DAYS: z.coerce
    .number()
    .min(0)
    .max(3_650)
    .default(7)
    .describe(
      'with FAIRNESS_ACCOUNT_AGE_CLAIM: an account younger than this (days) when it first tries a sale is flagged',
    ),
};

const doorSchema = z.object(doorEnv);
type DoorEnv = z.output<typeof doorSchema>;

/** The challenge at the door (docs/fairness.md): CHALLENGE* variables. */
export interface ChallengeConfig {
  kind: 'off' | 'pow' | 'turnstile' | 'hcaptcha';
  /** null: every product */
  products: string[] | null;
  secret: string;
  siteKey: string | null;
  verifyUrl: string | null;
  ttlSeconds: number;
  cleanFloorMs: number;
  flaggedFloorMs: number;
  /**
   * The keys of each kind this deployment can check (null: none configured), for the deployment's
   * own kind and for the products seeded with a kind of their own.
   */
  keys: {
    pow: string | null;
    turnstile: { secret: string; siteKey: string | null } | null;
    hcaptcha: { secret: string; siteKey: string | null } | null;
  };
}

export type ChallengeKind = keyof ChallengeConfig['keys'];

export function challengeConfig(env: DoorEnv): ChallengeConfig {
  return {
    kind: env.CHALLENGE,
    products: env.CHALLENGE_PRODUCTS?.split(',') ?? null,
    secret: env.CHALLENGE_SECRET ?? '',
    siteKey: env.CHALLENGE_SITE_KEY ?? null,
    verifyUrl: env.CHALLENGE_VERIFY_URL ?? null,
    ttlSeconds: env.CHALLENGE_TTL_S,
    cleanFloorMs: env.CHALLENGE_CLEAN_FLOOR_MS,
    flaggedFloorMs: env.CHALLENGE_FLAGGED_FLOOR_MS,
    keys: {
      pow:
        env.CHALLENGE_POW_SECRET ??
        (env.CHALLENGE === 'pow' ? (env.CHALLENGE_SECRET ?? null) : null),
      turnstile: providerKeys(
        env,
        'turnstile',
        env.CHALLENGE_TURNSTILE_SECRET,
        env.CHALLENGE_TURNSTILE_SITE_KEY,
      ),
      hcaptcha: providerKeys(
        env,
        'hcaptcha',
        env.CHALLENGE_HCAPTCHA_SECRET,
        env.CHALLENGE_HCAPTCHA_SITE_KEY,
      ),
    },
  };
}

/** A provider's keys: its own variables, or the deployment's when it is the deployment's kind. */
function providerKeys(
  env: DoorEnv,
  kind: 'turnstile' | 'hcaptcha',
  secret: string | undefined,
  siteKey: string | undefined,
): { secret: string; siteKey: string | null } | null {
  if (secret) return { secret, siteKey: siteKey ?? null };
  if (env.CHALLENGE === kind && env.CHALLENGE_SECRET) {
    return { secret: env.CHALLENGE_SECRET, siteKey: env.CHALLENGE_SITE_KEY ?? null };
  }
  return null;
}

/** The kinds whose keys are configured: a product may be seeded with one of them. */
export function configuredKinds(config: ChallengeConfig): Set<ChallengeKind> {
  const kinds = Object.keys(config.keys) as ChallengeKind[];
  return new Set(kinds.filter((k) => config.keys[k] !== null));
}

/** The fairness rules' settings (docs/fairness.md): FAIRNESS_* variables. */
export interface FairnessConfig {
  identitiesPerBlock: number;
  burstIdentities: number;
  burstWindowSeconds: number;
  /** null without FAIRNESS_ACCOUNT_AGE_CLAIM: accounts' ages are not judged */
  accountMinAgeDays: number | null;
  /** the claim of the shop's token that holds when the account was made; null: none */
  accountAgeClaim: string | null;
}

export function fairnessConfig(env: DoorEnv): FairnessConfig {
  const claim = env.FAIRNESS_ACCOUNT_AGE_CLAIM ?? null;
  return {
    identitiesPerBlock: env.FAIRNESS_IDENTITIES_PER_BLOCK,
    burstIdentities: env.FAIRNESS_BURST_IDENTITIES,
    burstWindowSeconds: env.FAIRNESS_BURST_WINDOW_S,
    accountMinAgeDays: claim ? env.FAIRNESS_ACCOUNT_MIN_AGE_DAYS : null,
    accountAgeClaim: claim,
  };
}
