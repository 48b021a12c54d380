/**
 * The variables of draws (docs/draw.md): the beacon chain a draw takes its randomness from (its
 * drand info, the public key among it, kept here: a relay never tells this service which key to
 * trust), the relays asked for its rounds, and the margin between a freeze and its round. Part of
 * env.ts's schema.
 */
import { z } from 'zod';
import { chainProblem, QUICKNET, QUICKNET_RELAYS, type ChainInfo } from '../draw/chain.js';

/** Why a chain info's JSON cannot draw, if it cannot (its scheme, a hash it does not hash to). */
export function chainInfoProblem(text: string): string | undefined {
  let info: ChainInfo;
  try {
    info = JSON.parse(text) as ChainInfo;
  } catch {
    return "must be a chain's /info answer as JSON";
  }
  if (typeof info?.public_key !== 'string' || typeof info.hash !== 'string' || !info.metadata) {
    return "missing public_key, hash or metadata: a chain's /info answer";
  }
  return chainProblem(info);
}

const relayList = (text: string) =>
  text
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);

const chainInfo = z.string().superRefine((text, ctx) => {
  const problem = chainInfoProblem(text);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const relays = z
  .string()
  .refine(
    (text) =>
      relayList(text).length > 0 && relayList(text).every((u) => /^https?:\/\/[^\s/]+/.test(u)),
    'must be http(s) URLs, comma-separated',
  );

/** The draws' beacon, from the variables (checked by the schema). */
export function drawConfig(env: {
  DRAW_CHAIN_INFO: string;
  DRAW_BEACON_URLS: string;
  DRAW_BEACON_MARGIN_MS: number;
  DRAW_BEACON_TIMEOUT_MS: number;
}) {
  return {
    chain: JSON.parse(env.DRAW_CHAIN_INFO) as ChainInfo,
    relays: relayList(env.DRAW_BEACON_URLS),
    marginMs: env.DRAW_BEACON_MARGIN_MS,
    fetchTimeoutMs: env.DRAW_BEACON_TIMEOUT_MS,
  };
}

export const drawEnv = {
  DRAW_CHAIN_INFO: chainInfo
    .default(JSON.stringify(QUICKNET))
    .describe(
      "the beacon chain draws take their randomness from: its relays' /info answer as JSON (drand quicknet's by default; `up`: its local chain)",
    ),
  DRAW_BEACON_URLS: relays
    .default(QUICKNET_RELAYS.join(','))
    .describe("the chain's HTTP relays, asked in order for a round (`up`: its local chain)"),
  DRAW_BEACON_MARGIN_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3_600_000)
    .default(10_000)
    .describe("a draw's round is the first at or after its freeze plus this"),
  DRAW_BEACON_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(3_000)
    .describe('a relay that does not answer a round this long is skipped for the next'),
  LOCAL_BEACON_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_535)
    .default(3090)
    .describe(
      'port `up` serves its local beacon chain on, for draws without the internet (0: none)',
    ),
};
