/**
 * A per-process local allowance of a shared GCRA bucket (docs/decisions.md, "A client address's
 * bucket is leased"): the process leases several cells at once from the bucket in Redis
 * (lua/rateLimit-1.lua with ARGV[3]), spends them in process, and asks again when they are spent
 * or their lease ran out. The large rate limiters do the same; here it is for the per-address
 * limit, whose bucket cannot share a slot with the sale's keys.
 *
 * What it keeps: a cell is only ever spent after the bucket gave it, so every process together
 * never admits more than the bucket allows (over a span T: burst + T x rate, plus the cells leased
 * within a lease before the span). What it gives up: up to `leaseCells` cells per process per
 * lease, taken but left unspent when the lease runs out (under-admission, never over-).
 */
import type { RateLimit } from '../config/index.js';
import type { RateDecision } from '../redis/rate-limit.js';

/** How long leased cells may be spent: ~one refill of a lease at the rate, so little is wasted. */
export const LEASE_MS = 50;
/** The most cells one lease asks for: beyond that a lease saves nothing worth its waste. */
const MAX_CELLS = 64;
/** Leases a request may wait through (others spent their cells) before it asks for one cell. */
const MAX_ROUNDS = 3;
/** The most cells a lease asks for requests already waiting (spent as it arrives). */
const MAX_WAITING_CELLS = 1_024;
/** Past this many buckets, those with nothing to keep are dropped. */
const MAX_HELD = 10_000;

/**
 * Cells a process leases at once from `limit`'s bucket: at most a sixteenth of the burst and what
 * the rate refills in {@link LEASE_MS}, so the waste stays small against both; 1 for small limits,
 * which is a take per request, as without an allowance.
 */
export function leaseCells(limit: RateLimit): number {
  const refill = Math.floor((limit.rate * LEASE_MS) / limit.periodMs);
  return Math.max(1, Math.min(MAX_CELLS, Math.floor(limit.burst / 16), refill));
}

interface Held {
  cells: number;
  /** local time the cells may be spent until */
  until: number;
  /** the bucket's remaining cells when they were leased */
  remaining: number;
  /** local time the bucket is full again, as of the lease */
  resetAt: number;
  /** local time before which the bucket refuses anyway (its last answer's retry) */
  refusedUntil: number;
  leasing?: Promise<void> | undefined;
  /** requests of this process waiting for a lease */
  waiting: number;
}

/** Takes `want` cells from a bucket in Redis (lua/rateLimit-1.lua). */
export type LeaseCells = (key: string, limit: RateLimit, want: number) => Promise<RateDecision>;

export class RateAllowances {
  private readonly held = new Map<string, Held>();

  constructor(private readonly lease: LeaseCells) {}

  /**
   * One request from the bucket `key`: a leased cell when one is left, else a new lease.
   * @throws what the lease's Redis call throws (the caller fails open on a sick shard)
   */
  async take(key: string, limit: RateLimit): Promise<RateDecision> {
    const cells = leaseCells(limit);
    if (cells === 1) return this.lease(key, limit, 1);
    const held = this.hold(key);
    const now = this.spend(held);
    if (now) return now;
    held.waiting++;
    try {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        // one lease at a time per bucket: the others wait for it and share its cells
        await (held.leasing ?? this.renew(held, key, limit, cells));
        const got = this.spend(held, true);
        if (got) return got;
      }
    } finally {
      held.waiting--;
    }
    // others spent every lease this request waited for: one cell of its own, as without leases
    return this.lease(key, limit, 1);
  }

  /**
   * A leased cell, the refusal the bucket named, or undefined: a lease is needed.
   * @param waited - a lease was asked since the request came: its refusal (or the bucket it
   *   emptied) holds for the request even if its retry time has passed while the waiters woke
   */
  private spend(held: Held, waited = false): RateDecision | undefined {
    const now = Date.now();
    if (held.cells === 0 || now >= held.until) {
      // the bucket's TAT only grows, so it refuses until the retry it named, whoever asks
      return now < held.refusedUntil || (waited && held.refusedUntil > 0)
        ? refused(held.refusedUntil - now, held.resetAt - now)
        : undefined;
    }
    held.cells--;
    const resetMs = Math.max(0, held.resetAt - now);
    const remaining = held.remaining + held.cells;
    return { allowed: true, remaining, resetMs, retryMs: 0, taken: 1, nextMs: 0 };
  }

  /**
   * Leases `cells`, or as many as requests wait (they spend them at once: batching, not waste),
   * dropping what the last lease left.
   */
  private renew(held: Held, key: string, limit: RateLimit, cells: number): Promise<void> {
    const want = Math.min(MAX_WAITING_CELLS, Math.max(cells, held.waiting));
    held.leasing = this.lease(key, limit, want)
      .then((d) => {
        const now = Date.now();
        held.cells = d.taken;
        held.until = now + LEASE_MS;
        held.remaining = d.remaining;
        held.resetAt = now + d.resetMs;
        // refused, or emptied by this lease: nothing passes before the next cell, so no request
        // asks again before then (the times are rounded up to the ms: under-admits by as much)
        const next = d.allowed ? d.nextMs : d.retryMs;
        held.refusedUntil = next > 0 ? now + next : 0;
      })
      .finally(() => (held.leasing = undefined));
    return held.leasing;
  }

  private hold(key: string): Held {
    let held = this.held.get(key);
    if (!held) {
      if (this.held.size >= MAX_HELD) this.dropIdle();
      held = { cells: 0, until: 0, remaining: 0, resetAt: 0, refusedUntil: 0, waiting: 0 };
      this.held.set(key, held);
    }
    return held;
  }

  private dropIdle(): void {
    const now = Date.now();
    for (const [key, h] of this.held) {
      if (!h.leasing && h.waiting === 0 && now >= h.until && now >= h.refusedUntil)
        this.held.delete(key);
    }
  }
}

const refused = (retryMs: number, resetMs: number): RateDecision => ({
  allowed: false,
  remaining: 0,
  resetMs: Math.max(0, resetMs),
  retryMs: Math.max(1, retryMs),
  taken: 0,
  nextMs: 0,
});
