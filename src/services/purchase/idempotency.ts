/**
 * What the purchase use case needs of `Idempotency-Key` records (IETF httpapi draft): the port,
 * implemented by inventory's IdempotencyStore (the records, their leases and the per-shopper cap
 * live in Redis; see there for the protocol), and the request fingerprint a record is bound to.
 */
import { hash } from 'node:crypto';
import type {
  Begin,
  FoldedRecord,
  IdempotencyHandle,
  IdempotencyRecord,
  PurchaseAnswer,
  StoredResponse,
} from '../../inventory/index.js';

export type { Begin, IdempotencyHandle, IdempotencyRecord, PurchaseAnswer, StoredResponse };

export interface IdempotencyRecords {
  /** The shopper's key for this product, read only; undefined when it holds none. */
  peek(userId: string, productId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /**
   * Claims the shopper's key for this request's product (a key is scoped to a shopper and a
   * product), with the order id it will sell under, or says what else.
   */
  begin(
    userId: string,
    key: string,
    fresh: Omit<IdempotencyRecord, 'leaseUntil'> & { productId: string },
  ): Promise<Begin>;
  /**
   * The key's record for the home deduct to read and write itself, in the state {@link begin}
   * would leave it (`done`: the answer it holds once sold), and the handle to settle it by after a
   * spill. Undefined: only {@link begin} can claim this key now (old records may live elsewhere).
   */
  fold(
    userId: string,
    key: string,
    fresh: Omit<IdempotencyRecord, 'leaseUntil'> & { productId: string },
    done: PurchaseAnswer,
  ): Promise<{ folded: FoldedRecord; handle: IdempotencyHandle } | undefined>;
  /** What a folded deduct found in the key's record (`raw`), answered as {@link begin} would. */
  foundFolded(handle: IdempotencyHandle, raw: string): Begin;
  /** The folded deduct got no reply: a running record it left is marked unknown. */
  unknownIfRunning(folded: FoldedRecord, handle: IdempotencyHandle): Promise<void>;
  /**
   * Takes a stale key over for a new run, or stores the answer its old run turned out to have.
   * @returns the new handle, or null when another retry got there first.
   */
  takeOver(
    stale: { key: string; raw: string; index: IdempotencyHandle['index'] },
    next: IdempotencyRecord,
  ): Promise<IdempotencyHandle | null>;
  /** Stores the final answer (a refusal may be evicted at the shopper's cap; a sale never). */
  finish(handle: IdempotencyHandle, answer: PurchaseAnswer): Promise<void>;
  /** Nothing was sold and the answer is not final: forget the key, so a retry runs again. */
  abandon(handle: IdempotencyHandle): Promise<void>;
  /** The purchase ended without knowing whether it sold: the next retry resolves it. */
  markUnknown(handle: IdempotencyHandle): Promise<void>;
}

/** A fingerprint of the request (any JSON value; pass it parsed, with defaults applied). */
export function requestFingerprint(request: unknown): string {
  // the one-shot hash: a Hash object per keyed purchase cost more than the digest itself
  return hash('sha256', JSON.stringify(request), 'base64url');
}
