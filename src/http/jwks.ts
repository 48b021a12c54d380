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
 *
 * The set's body is read up to `maxBytes` (256 KiB): a provider's set is a few kB (ten RSA keys
 * are ~15 kB), and an unbounded read let a 40 MB answer take the API from 247 to 412 MB. A bigger
 * one is refused like any failed fetch: the keys held are kept, and listeners hear why (the API
 * counts and logs it). `refetch()` fetches now, whatever the set's age and the bucket: an admin's
 * answer to a leaked key the provider withdrew (POST /admin/jwks/refresh reaches every API
 * process).
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

/** The largest key set read (default of `maxBytes`). */
export const JWKS_MAX_BYTES = 256 * 1024;

/** Why a fetch of the set failed (the label of seckill_jwks_fetch_failures_total). */
export type JwksFailure = 'too-large' | 'status' | 'invalid' | 'timeout' | 'network';

export interface JwksFetchFailed {
  reason: JwksFailure;
  detail: string;
  /** a set was held and is kept */
  keptHeldKeys: boolean;
}

/** Thrown inside a fetch: a failure with its reason. */
class FetchFailed extends Error {
  constructor(
    readonly reason: JwksFailure,
    message: string,
  ) {
    super(message);
  }
}

/** The answer's body, refused past `maxBytes` (by its Content-Length, or as it arrives). */
async function boundedText(res: Response, maxBytes: number): Promise<string> {
  const tooLarge = (seen: string) =>
    new FetchFailed('too-large', `the JWKS is larger than ${maxBytes} bytes (${seen})`);
  const declared = Number(res.headers.get('content-length'));
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw tooLarge(`Content-Length ${declared}`);
  }
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let read = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.byteLength;
    if (read > maxBytes) {
      await reader.cancel();
      throw tooLarge(`${read} bytes read so far`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function failureOf(err: unknown): FetchFailed {
  if (err instanceof FetchFailed) return err;
  const e = err as Error;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
    return new FetchFailed('timeout', 'no complete answer in time');
  }
  if (e instanceof SyntaxError || e?.name === 'JWKSInvalid') {
    return new FetchFailed('invalid', `not a key set: ${e.message}`);
  }
  return new FetchFailed('network', e instanceof Error ? e.message : String(err));
}

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
  /** a bigger set is refused (default {@link JWKS_MAX_BYTES}) */
  maxBytes?: number;
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
  /** sets taken (a fetch that failed takes none) */
  loads = 0;
  /** the key ids of the set held */
  kids: string[] = [];
  private resolver: Resolver | undefined;
  private lastFailure: JwksFetchFailed | undefined;
  private readonly failureListeners = new Set<(f: JwksFetchFailed) => void>();
  private fetchedAt = 0;
  private pending: Promise<void> | undefined;
  private tokens: number;
  private filledAt: number;
  private readonly maxAgeMs: number;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly now: () => number;

  constructor(private readonly opts: JwksOptions) {
    this.maxAgeMs = opts.maxAgeMs ?? 600_000;
    this.burst = opts.refreshBurst ?? 3;
    this.refillMs = opts.refillMs ?? 10_000;
    this.timeoutMs = opts.timeoutMs ?? 3_000;
    this.maxBytes = opts.maxBytes ?? JWKS_MAX_BYTES;
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

  /** Calls `listener` on every failed fetch; returns what stops it. */
  onFetchFailed(listener: (failure: JwksFetchFailed) => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
  }

  /**
   * Fetches the set now, after any fetch in flight (which may have started before the provider
   * withdrew a key), whatever its age and the bucket.
   * @throws ProblemError 503 when it cannot be fetched (the keys held are kept)
   */
  async refetch(): Promise<{ kids: string[] }> {
    await this.pending?.catch(() => undefined);
    const loads = this.loads;
    await this.load().catch(() => undefined);
    if (this.loads === loads) {
      const why = this.lastFailure;
      throw providerUnavailable(
        `the identity provider's keys (JWT_JWKS_URL) could not be fetched${
          why ? ` (${why.reason}: ${why.detail})` : ''
        }; the keys held are kept`,
      );
    }
    return { kids: [...this.kids] };
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
      if (!res.ok) {
        await res.body?.cancel();
        throw new FetchFailed('status', `the JWKS answered ${res.status}`);
      }
      const set = JSON.parse(await boundedText(res, this.maxBytes)) as JSONWebKeySet;
      this.resolver = createLocalJWKSet(set);
      this.kids = set.keys.flatMap((k) => (typeof k.kid === 'string' ? [k.kid] : []));
      this.fetchedAt = this.now();
      this.loads++;
    } catch (caught) {
      const err = failureOf(caught);
      const failure = { reason: err.reason, detail: err.message, keptHeldKeys: !!this.resolver };
      this.lastFailure = failure;
      for (const listener of this.failureListeners) listener(failure);
      // held keys keep working; a verification RETRY_MS later tries the provider again
      if (this.resolver) {
        this.fetchedAt = this.now() - this.maxAgeMs + Math.min(this.maxAgeMs, RETRY_MS);
        return;
      }
      throw providerUnavailable(
        `the identity provider's keys (JWT_JWKS_URL) could not be fetched: ${err.message}`,
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
