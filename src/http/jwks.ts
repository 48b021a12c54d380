/**
 * The identity provider's signing keys (JWT_JWKS_URL), fetched and kept in memory: a token is
 * verified against the keys held, and the set is fetched again when it is older than
 * `maxAgeMs`, or when a token names a key it does not have (the provider rotated its keys).
 * Those refreshes are bounded by a small bucket (`refreshBurst`, one more every `refillMs`), so
 * a flood of tokens with made-up key ids costs the provider a few fetches, not one each; while
 * the bucket is empty such a token is refused as signed by an unknown key. Fetches in flight are
 * shared. A set that cannot be fetched again is kept and used (an outage of the provider does not
 * stop shoppers it already signed for); with no set at all the token is refused with a 503.
 * jose selects and imports the keys (createLocalJWKSet) and checks the signature.
 */
import {
  createLocalJWKSet,
  errors,
  type CryptoKey,
  type JSONWebKeySet,
  type JWSHeaderParameters,
} from 'jose';
import { ProblemError } from '../errors.js';

type Resolver = ReturnType<typeof createLocalJWKSet>;

/** After a failed fetch, held keys are used this long before the provider is asked again. */
const RETRY_MS = 30_000;

export interface JwksOptions {
  url: string;
  /** a set older than this is fetched again before the next verification (default 10 min) */
  maxAgeMs?: number;
  /** refreshes unknown key ids may cause at once (default 3) ... */
  refreshBurst?: number;
  /** ... and one more each this long (default 10 s) */
  refillMs?: number;
  /** a fetch that takes longer fails (default 3 s) */
  timeoutMs?: number;
  now?: () => number;
}

export const providerUnavailable = (detail: string) =>
  new ProblemError({
    status: 503,
    code: 'identity-provider-unavailable',
    title: 'Identity provider unavailable, try again',
    detail,
    headers: { 'Retry-After': '1' },
  });

export class JwksKeys {
  /** fetches started (tests and the docs count them) */
  fetches = 0;
  private resolver: Resolver | undefined;
  private fetchedAt = 0;
  private pending: Promise<void> | undefined;
  private tokens: number;
  private filledAt: number;
  private readonly maxAgeMs: number;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: JwksOptions) {
    this.maxAgeMs = opts.maxAgeMs ?? 600_000;
    this.burst = opts.refreshBurst ?? 3;
    this.refillMs = opts.refillMs ?? 10_000;
    this.timeoutMs = opts.timeoutMs ?? 3_000;
    this.now = opts.now ?? Date.now;
    this.tokens = this.burst;
    this.filledAt = this.now();
  }

  /** The key that verifies a token with this header (jose's key function). */
  async keyFor(header: JWSHeaderParameters): Promise<CryptoKey> {
    if (!this.resolver || this.now() - this.fetchedAt >= this.maxAgeMs) await this.load();
    try {
      return await this.resolver!(header);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      // a rotation: the provider publishes the new key; a made-up id finds the bucket empty
      if (!this.pending && !this.takeRefresh()) throw err;
      await this.load();
      return this.resolver!(header);
    }
  }

  /** One refresh from the bucket, if it holds one. */
  private takeRefresh(): boolean {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.filledAt) / this.refillMs);
    this.filledAt = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Fetches the set (one fetch for every caller meanwhile); a set already held outlives a failure. */
  private load(): Promise<void> {
    this.pending ??= this.fetchSet().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchSet(): Promise<void> {
    this.fetches++;
    try {
      const res = await fetch(this.opts.url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (!res.ok) throw new Error(`the JWKS answered ${res.status}`);
      const set = (await res.json()) as JSONWebKeySet;
      this.resolver = createLocalJWKSet(set);
      this.fetchedAt = this.now();
    } catch (err) {
      // held keys keep working; a verification RETRY_MS later tries the provider again
      if (this.resolver) {
        this.fetchedAt = this.now() - this.maxAgeMs + Math.min(this.maxAgeMs, RETRY_MS);
        return;
      }
      throw providerUnavailable(
        `the identity provider's keys (JWT_JWKS_URL) could not be fetched: ${
          err instanceof Error ? err.message : String(err)
        }`,
      );
    }
  }
}

const sets = new Map<string, JwksKeys>();

/** The process's key set of `url` (one per URL: every route and app of the process shares it). */
export function jwksOf(url: string): JwksKeys {
  let keys = sets.get(url);
  if (!keys) sets.set(url, (keys = new JwksKeys({ url })));
  return keys;
}
