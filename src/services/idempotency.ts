/**
 * `Idempotency-Key` records (IETF httpapi draft), per shopper. The first request with a key
 * claims it with a short lease and the order id it will sell under; its final answer is stored
 * (IDEMPOTENCY_TTL_SECONDS) and replayed to a retry with the same request. A transient answer
 * (not started yet, unknown product, busy) is not stored: the retry runs again. A request that
 * ended without knowing whether it sold (a lost Redis reply), or whose process died (its lease ran
 * out), leaves a stale record: the next retry resolves it from the sale's own state (the order id
 * in the buyer's marker, or given up for good) before anything runs again.
 */
import { createHash } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import type { Keys } from '../redis/keys.js';
import { luaScript } from '../redis/scripts.js';

const swap = luaScript('idempotencySwap');

/** An answer as the client got it, replayed byte for byte. */
export interface StoredResponse {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
  /** the problem code of an error answer (for the metrics; the body says it to the client) */
  problem?: string;
}

/** What Redis holds under an idempotency key (JSON; this module is its only reader and writer). */
export interface IdempotencyRecord {
  /** fingerprint of the request (parsed, defaults applied) */
  fp: string;
  /** the order the request sells under */
  orderId?: string;
  productId?: string;
  quantity?: number;
  /** while running: local time (ms) until which the request is presumed alive */
  leaseUntil?: number;
  /** the purchase ended without knowing whether it sold */
  unknown?: true;
  /** the final answer, once there is one */
  done?: StoredResponse;
}

export function encodeIdempotencyRecord(r: IdempotencyRecord): string {
  return JSON.stringify(r);
}

export function decodeIdempotencyRecord(raw: string): IdempotencyRecord {
  const v = JSON.parse(raw) as IdempotencyRecord;
  if (typeof v?.fp !== 'string') throw new Error('not an idempotency record');
  return v;
}

/** A claimed key: where it lives and what it holds now. */
export interface IdempotencyHandle {
  key: string;
  record: IdempotencyRecord;
}

export type Begin =
  | ({ kind: 'new' } & IdempotencyHandle)
  | { kind: 'replay'; response: StoredResponse }
  /** the first request with this key is still running (its lease has not run out) */
  | { kind: 'in-progress'; orderId: string | undefined }
  /** the key was used with another request */
  | { kind: 'mismatch' }
  /** its request ended without an answer or died: resolve `record.orderId`, then take over */
  | ({ kind: 'stale'; raw: string } & IdempotencyHandle);

export class IdempotencyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
    private readonly leaseMs: number,
  ) {}

  /** A fingerprint of the request (any JSON value; pass it parsed, with defaults applied). */
  static fingerprint(request: unknown): string {
    return createHash('sha256').update(JSON.stringify(request)).digest('base64url');
  }

  private redisKey(userId: string, key: string): string {
    return this.keys.idempotency(userId, createHash('sha256').update(key).digest('base64url'));
  }

  /** A running record for `fresh`'s request, leased from now. */
  private running(fresh: Omit<IdempotencyRecord, 'leaseUntil'>): IdempotencyRecord {
    return { ...fresh, leaseUntil: Date.now() + this.leaseMs };
  }

  /** Claims the key for this request (with the order id it will sell under), or says what else. */
  async begin(
    userId: string,
    key: string,
    fresh: Omit<IdempotencyRecord, 'leaseUntil'>,
  ): Promise<Begin> {
    const rk = this.redisKey(userId, key);
    for (let attempt = 0; attempt < 2; attempt++) {
      const record = this.running(fresh);
      const set = await this.redis.set(
        rk,
        encodeIdempotencyRecord(record),
        'EX',
        this.ttlSeconds,
        'NX',
      );
      if (set === 'OK') return { kind: 'new', key: rk, record };
      const raw = await this.redis.get(rk);
      if (raw === null) continue; // expired in between: claim again
      const found = decodeIdempotencyRecord(raw);
      if (found.fp !== fresh.fp) return { kind: 'mismatch' };
      if (found.done) return { kind: 'replay', response: found.done };
      if (found.unknown || (found.leaseUntil ?? 0) <= Date.now()) {
        return { kind: 'stale', key: rk, record: found, raw };
      }
      return { kind: 'in-progress', orderId: found.orderId };
    }
    throw new Error('idempotency key kept vanishing');
  }

  /**
   * Takes a stale key over for a new run (with a new order id), or stores the answer its old run
   * turned out to have: only if nobody else did meanwhile.
   * @returns the new handle, or null when another retry got there first.
   */
  async takeOver(stale: { key: string; raw: string }, next: IdempotencyRecord) {
    const record = next.done ? next : this.running(next);
    const swapped = await swap.run<number>(
      this.redis,
      [stale.key],
      [stale.raw, encodeIdempotencyRecord(record), this.ttlSeconds],
    );
    return swapped === 1 ? { key: stale.key, record } : null;
  }

  /** Stores the final answer (kept for the TTL). */
  async finish(h: IdempotencyHandle, response: StoredResponse): Promise<void> {
    const rec = encodeIdempotencyRecord({ ...h.record, done: response });
    await this.redis.set(h.key, rec, 'EX', this.ttlSeconds, 'XX');
  }

  /** Nothing was sold and the answer is not final: forget the key, so a retry runs again. */
  async abandon(h: IdempotencyHandle): Promise<void> {
    await this.redis.del(h.key);
  }

  /** The purchase ended without knowing whether it sold: the next retry resolves it. */
  async markUnknown(h: IdempotencyHandle): Promise<void> {
    const rec = encodeIdempotencyRecord({ ...h.record, unknown: true });
    await this.redis.set(h.key, rec, 'EX', this.ttlSeconds, 'XX');
  }
}
