/**
 * `Idempotency-Key` (IETF httpapi draft): the first request with a key runs and its answer is
 * stored; a retry with the same key and the same body gets the stored answer; the same key with
 * another body is 422; a retry while the first is still running is 409. Keys are scoped per
 * shopper and kept for IDEMPOTENCY_TTL_SECONDS. A 5xx answer is not stored (the retry runs).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ProblemError } from '../errors.js';
import type { Keys } from '../redis/keys.js';

/** Visible ASCII, as the draft's examples; bounded so it cannot bloat Redis. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredResponse {
  status: number;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
}

interface Record_ {
  fp: string;
  done?: StoredResponse;
}

export type Begin = { kind: 'new'; key: string } | { kind: 'replay'; response: StoredResponse };

export class IdempotencyStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly ttlSeconds: number,
  ) {}

  /** Validates the header value. @throws ProblemError 400 */
  static parseKey(value: string | undefined): string | undefined {
    if (value === undefined) return undefined;
    if (!KEY_PATTERN.test(value)) {
      throw new ProblemError({
        status: 400,
        code: 'invalid-idempotency-key',
        title: 'Invalid Idempotency-Key',
        detail: 'Idempotency-Key must be 1-255 visible ASCII characters',
      });
    }
    return value;
  }

  static fingerprint(body: unknown): string {
    return createHash('sha256').update(JSON.stringify(body)).digest('base64url');
  }

  private redisKey(userId: string, key: string): string {
    return this.keys.idempotency(userId, createHash('sha256').update(key).digest('base64url'));
  }

  /**
   * Claims the key for this request, or tells what to answer instead.
   * @throws ProblemError 409 (the first request is still running), 422 (another body).
   */
  async begin(userId: string, key: string, fingerprint: string): Promise<Begin> {
    const rk = this.redisKey(userId, key);
    for (let attempt = 0; attempt < 2; attempt++) {
      const fresh: Record_ = { fp: fingerprint };
      const set = await this.redis.set(rk, JSON.stringify(fresh), 'EX', this.ttlSeconds, 'NX');
      if (set === 'OK') return { kind: 'new', key: rk };
      const raw = await this.redis.get(rk);
      if (raw === null) continue; // expired in between: claim again
      const rec = JSON.parse(raw) as Record_;
      if (rec.fp !== fingerprint) {
        throw new ProblemError({
          status: 422,
          code: 'idempotency-key-reused',
          title: 'Idempotency-Key reused with another request',
          detail: 'this Idempotency-Key was used with a different body',
        });
      }
      if (!rec.done) {
        throw new ProblemError({
          status: 409,
          code: 'idempotency-key-in-use',
          title: 'A request with this Idempotency-Key is in progress',
          detail: 'retry once the first request has been answered',
          headers: { 'Retry-After': '1' },
        });
      }
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
    const rec: Record_ = { fp: fingerprint, done: response };
    await this.redis.set(rk, JSON.stringify(rec), 'EX', this.ttlSeconds, 'XX');
  }
}
