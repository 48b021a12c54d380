/**
 * Receivers' host names, resolved off the process's shared thread pool. `dns.lookup` (what
 * http.request uses by default) runs getaddrinfo on libuv's pool of 4 threads, which also serves
 * every other lookup of the process (the identity provider's JWKS fetch among them), file reads
 * and crypto: a receiver whose name answers slowly, and its owner decides that, held the pool and
 * everything queued behind it. Here a c-ares resolver of our own asks the DNS servers directly
 * (UDP, no thread), with its own timeout and tries, shares a lookup in flight among the deliveries
 * that need it, and keeps answers for their TTL (capped) in a bounded cache.
 *
 * What it does not read: /etc/hosts (c-ares asks DNS), except `localhost` and `*.localhost`, which
 * are loopback by definition (RFC 6761); nor the resolv.conf search list: a receiver's name is
 * written in full.
 */
import { Resolver } from 'node:dns/promises';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface ReceiverNamesOptions {
  /** DNS servers (`ip` or `ip:port`); default: the system's (resolv.conf) */
  servers?: readonly string[];
  /** how long one try waits for an answer (default 2 s) */
  timeoutMs?: number;
  /** tries per server (default 2) */
  tries?: number;
  /** names kept at most; past it the least recently used goes (default 1,000) */
  maxNames?: number;
  /** an answer is kept its TTL, at most this long (default 300 s) */
  maxTtlSeconds?: number;
  now?: () => number;
}

interface Cached {
  addresses: ResolvedAddress[];
  expiresAt: number;
}

const LOOPBACK: ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** A DNS failure in the shape a socket's lookup reports it (code ENOTFOUND, ETIMEOUT, ...). */
function lookupError(hostname: string, cause: unknown): NodeJS.ErrnoException {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? 'ENOTFOUND';
  const err = new Error(`${hostname} did not resolve: ${code}`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

export class ReceiverNames {
  /** queries sent (A and AAAA count one each): tests read it */
  queries = 0;
  private readonly resolver: Resolver;
  private readonly cache = new Map<string, Cached>();
  private readonly inFlight = new Map<string, Promise<ResolvedAddress[]>>();
  private readonly maxNames: number;
  private readonly maxTtlMs: number;
  private readonly now: () => number;

  constructor(opts: ReceiverNamesOptions = {}) {
    this.resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
    if (opts.servers) this.resolver.setServers([...opts.servers]);
    this.maxNames = opts.maxNames ?? 1_000;
    this.maxTtlMs = (opts.maxTtlSeconds ?? 300) * 1_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Every address of `hostname` (IPv4 first), from the cache while its TTL lasts.
   * @throws an error with the DNS code (ENOTFOUND, ETIMEOUT, ...) when it has none
   */
  resolve(hostname: string): Promise<ResolvedAddress[]> {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return Promise.resolve(LOOPBACK);
    const hit = this.cache.get(name);
    if (hit && hit.expiresAt > this.now()) {
      // most recently used last: the bound drops from the front
      this.cache.delete(name);
      this.cache.set(name, hit);
      return Promise.resolve(hit.addresses);
    }
    if (hit) this.cache.delete(name);
    let pending = this.inFlight.get(name);
    if (!pending) {
      pending = this.ask(name).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, pending);
    }
    return pending;
  }

  /** Stops the queries in flight (they fail with ECANCELLED). */
  close(): void {
    this.resolver.cancel();
  }

  private async ask(name: string): Promise<ResolvedAddress[]> {
    this.queries += 2;
    const [v4, v6] = await Promise.allSettled([
      this.resolver.resolve4(name, { ttl: true }),
      this.resolver.resolve6(name, { ttl: true }),
    ]);
    const records = [
      ...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ ...r, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ ...r, family: 6 as const })) : []),
    ];
    if (records.length === 0) {
      throw lookupError(name, v4.status === 'rejected' ? v4.reason : undefined);
    }
    const addresses = records.map(({ address, family }) => ({ address, family }));
    const ttlMs = Math.min(this.maxTtlMs, Math.min(...records.map((r) => r.ttl)) * 1_000);
    if (ttlMs > 0) {
      this.cache.set(name, { addresses, expiresAt: this.now() + ttlMs });
      while (this.cache.size > this.maxNames) {
        this.cache.delete(this.cache.keys().next().value!);
      }
    }
    return addresses;
  }
}

let shared: ReceiverNames | undefined;

/** The process's resolver of receiver names (one cache for every delivery and registration). */
export function receiverNames(): ReceiverNames {
  return (shared ??= new ReceiverNames());
}
