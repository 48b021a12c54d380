/** The answers of the door's challenge and of the fairness report (docs/fairness.md). */
import { z } from 'zod';

const advantagePair = z.tuple([z.number(), z.number()]);

export const challenge = z.looseObject({
  kind: z.enum(['pow', 'turnstile', 'hcaptcha']),
  algorithm: z.string().optional().describe('pow: ALTCHA challenge fields'),
  challenge: z.string().optional(),
  maxnumber: z.number().int().optional(),
  salt: z.string().optional(),
  signature: z.string().optional(),
  answerAfter: z
    .string()
    .optional()
    .describe('pow: the answer is not taken before this (its floor)'),
  floorMs: z.number().int().optional(),
  expiresAt: z.string().optional(),
  siteKey: z.string().nullable().optional().describe("turnstile, hcaptcha: the widget's site key"),
});

export const fairnessReport = z.looseObject({
  productId: z.string(),
  epoch: z.number().int(),
  mode: z.enum(['room', 'plain']),
  identities: z.number().int().describe('E: distinct identities that tried'),
  flagged: z.number().int().describe('F: of them flagged by the pinned rules'),
  units: z.number().int().describe('U: units sold (persisted orders holding them)'),
  flaggedUnits: z.number().int().describe('u_F: units bought by flagged identities'),
  fairShare: z.number().describe('mu = U * F / E'),
  band: advantagePair.describe(
    '2.5 % and 97.5 % quantiles of u_F under a fair draw (hypergeometric)',
  ),
  advantage: z.number().nullable().describe('A = u_F / mu (null when mu is 0)'),
  advantageBand: advantagePair.nullable(),
  top1PercentShare: z.number().describe('share of U bought by the top 1 % of buyers'),
  clusters: z.array(
    z.looseObject({
      by: z.enum(['address-block', 'fingerprint']),
      key: z.string(),
      identities: z.number().int(),
      units: z.number().int(),
    }),
  ),
  rulesHash: z.string().describe("SHA-256 of the rules pinned at the sale's first note"),
  rules: z.looseObject({}),
  rulesChanged: z.boolean(),
  flaggedByRule: z.looseObject({}),
  final: z.boolean(),
  at: z.string(),
});
