/**
 * The draw's randomness: a round of a drand chain, fetched from its HTTP relays and verified with
 * drand-client against the chain info this service was configured with (never the relay's own
 * `/info`: a relay that serves another key is refused, not believed). The same code fetches from
 * drand's quicknet and from a local chain of the same scheme (local-chain.ts).
 */
import { fetchBeacon, HttpChainClient, type Chain, type ChainClient } from 'drand-client';
import type { ChainInfo } from './chain.js';

/** One round of a chain, as drand's `/public/<round>` answers it. */
export interface Beacon {
  round: number;
  /** SHA-256 of the signature, hex */
  randomness: string;
  /** the BLS signature of the round, hex */
  signature: string;
}

/** A drand-client chain whose info is the pinned one, whatever the relay would say. */
class PinnedChain implements Chain {
  constructor(
    readonly baseUrl: string,
    private readonly pinned: ChainInfo,
  ) {}

  info() {
    return Promise.resolve(this.pinned);
  }
}

const VERIFYING = { disableBeaconVerification: false, noCache: false };

/**
 * Is `beacon` round `round` of the chain `info` (its signature under the chain's key, its
 * randomness the signature's SHA-256)? drand-client's own check, on a beacon already in hand.
 */
export async function verifyBeacon(
  info: ChainInfo,
  beacon: Beacon,
  round: number,
): Promise<boolean> {
  const client: ChainClient = {
    options: VERIFYING,
    get: () => Promise.resolve(beacon),
    latest: () => Promise.resolve(beacon),
    chain: () => new PinnedChain('', info),
  };
  try {
    await fetchBeacon(client, round);
    return true;
  } catch {
    return false;
  }
}

/** What asking the relays for a round came to. */
export type RoundAnswer =
  | { kind: 'beacon'; beacon: Beacon; relay: string }
  /** no relay has it yet (or none answered): ask again */
  | { kind: 'not-yet'; errors: string[] }
  /** a relay answered a beacon that failed verification (and no other relay had a good one) */
  | { kind: 'refused'; relays: string[]; errors: string[] };

/**
 * Round `round` of the chain from the first relay that answers it verified. A relay that
 * answers a beacon failing verification is skipped (and named); one that does not answer within
 * `timeoutMs` too.
 */
export async function fetchRound(
  info: ChainInfo,
  relays: readonly string[],
  round: number,
  timeoutMs: number,
): Promise<RoundAnswer> {
  const errors: string[] = [];
  const refusedBy: string[] = [];
  for (const relay of relays) {
    const base = `${relay.replace(/\/+$/, '')}/${info.hash}`;
    const client = new HttpChainClient(new PinnedChain(base, info), VERIFYING);
    try {
      const raw = await withTimeout(client.get(round), timeoutMs, relay);
      const beacon: Beacon = {
        round: Number(raw.round),
        randomness: String(raw.randomness),
        signature: String(raw.signature),
      };
      if (await verifyBeacon(info, beacon, round)) return { kind: 'beacon', beacon, relay };
      refusedBy.push(relay);
      errors.push(`${relay}: round ${round} failed verification against chain ${info.hash}`);
    } catch (err) {
      errors.push(`${relay}: ${(err as Error).message}`);
    }
  }
  return refusedBy.length > 0
    ? { kind: 'refused', relays: refusedBy, errors }
    : { kind: 'not-yet', errors };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from ${what} in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
