/**
 * `Idempotency-Key` records (IETF httpapi draft): the first request with a key runs and its
 * answer is stored; a retry with the same key and the same request gets the stored answer; the
 * same key with another request is a mismatch; a retry while the first still runs is told so.
 * Keys are scoped per shopper and kept for IDEMPOTENCY_TTL_SECONDS. A 5xx answer is not stored
 * (the retry runs).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keys } from '../redis/keys.js';

/** An answer as the client got it, replayed byte for byte. */
export interface StoredResponse {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

/** What Redis holds under an idempotency key (JSON; this module is its only reader and writer). */
export interface IdempotencyRecord {
  /** fingerprint of the request */
  fp: string;
  /** the answer, once there is one */
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

export type Begin =
  | { kind: 'new'; key: string }
  | { kind: 'replay'; response: StoredResponse }
  /** the first request with this key is still running */
  | { kind: 'in-progress' }
  /** the key was used with another request */
  | { kind: 'mismatch' };

export class IdempotencyStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
  ) {}

  /** A fingerprint of the request (any JSON value). */
  static fingerprint(request: unknown): string {
    return createHash('sha256').update(JSON.stringify(request)).digest('base64url');
  }

  private redisKey(userId: string, key: string): string {
    return this.keys.idempotency(userId, createHash('sha256').update(key).digest('base64url'));
  }

  /** Claims the key for this request, or tells what to answer instead. */
  async begin(userId: string, key: string, fingerprint: string): Promise<Begin> {
    const rk = this.redisKey(userId, key);
    for (let attempt = 0; attempt < 2; attempt++) {
      const fresh = encodeIdempotencyRecord({ fp: fingerprint });
      const set = await this.redis.set(rk, fresh, 'EX', this.ttlSeconds, 'NX');
      if (set === 'OK') return { kind: 'new', key: rk };
      const raw = await this.redis.get(rk);
      if (raw === null) continue; // expired in between: claim again
      const rec = decodeIdempotencyRecord(raw);
      if (rec.fp !== fingerprint) return { kind: 'mismatch' };
      if (!rec.done) return { kind: 'in-progress' };
      return { kind: 'replay', response: rec.done };
    }
    throw new Error('idempotency key kept vanishing');
  }

  /** Stores the answer (kept for the TTL), or frees the key after a 5xx so a retry runs. */
  async finish(rk: string, fingerprint: string, response: StoredResponse): Promise<void> {
    if (response.status >= 500) {
      await this.redis.del(rk);
      return;
    }
    const rec = encodeIdempotencyRecord({ fp: fingerprint, done: response });
    await this.redis.set(rk, rec, 'EX', this.ttlSeconds, 'XX');
  }
}
