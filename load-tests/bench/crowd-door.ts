/**
 * The door of `npm run bench:crowd`'s challenge sides: a client asks a proof of work, solves it
 * natively off the event loop (pow-solvers.ts: a worker a core), waits out its floor, and brings
 * the answer as the Challenge header; a flagged address told to wait (429 challenge-spaced) waits
 * as told. And the figure each side reports: the bots' advantage against a fair draw
 * (docs/fairness.md).
 */
import { quantiles } from '../../src/services/fairness/hypergeometric.js';
import type { PowSolvers } from './pow-solvers.js';

interface PowChallenge {
  algorithm: string;
  challenge: string;
  maxnumber: number;
  salt: string;
  signature: string;
  answerAfter: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** The Challenge header's value for `who`, or undefined when `stopAt` passed first. */
export async function passDoor(
  base: string,
  productId: string,
  who: { user: string; ip: string },
  stopAt: number,
  count: () => void,
  solvers: PowSolvers,
): Promise<string | undefined> {
  while (Date.now() < stopAt) {
    count();
    const res = await fetch(`${base}/products/${encodeURIComponent(productId)}/challenge`, {
      headers: { 'x-user-id': who.user, 'x-forwarded-for': who.ip },
    }).catch(() => undefined);
    if (!res) {
      await sleep(1_000); // a connection the API dropped under the crowd: again after a second
      continue;
    }
    if (res.status !== 200) {
      await res.text();
      await sleep(Number(res.headers.get('retry-after') ?? 1) * 1_000);
      continue;
    }
    const c = (await res.json()) as PowChallenge;
    const number = await solvers.solve(c);
    await sleep(Date.parse(c.answerAfter) - Date.now() + 5);
    const { algorithm, challenge, salt, signature } = c;
    return Buffer.from(JSON.stringify({ algorithm, challenge, number, salt, signature })).toString(
      'base64',
    );
  }
  return undefined;
}

/**
 * The bots' advantage A = u_F / mu with mu = U * F / E, and its 95 % band (the hypergeometric
 * quantiles over mu), E every identity that tried (shoppers and bots), F the bots.
 */
export function advantage(
  identities: number,
  bots: number,
  units: number,
  botUnits: number,
): { advantage: number | null; band: [number, number] | null; fairShare: number } {
  const mu = identities === 0 ? 0 : (units * bots) / identities;
  if (mu === 0) return { advantage: null, band: null, fairShare: 0 };
  const draws = Math.min(units, identities);
  const [low, high] = quantiles({ population: identities, marked: bots, draws }, [0.025, 0.975]);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { advantage: r(botUnits / mu), band: [r(low! / mu), r(high! / mu)], fairShare: r(mu) };
}
