/**
 * `Idempotency-Key` records (IETF httpapi draft), per shopper and product: a key means "this
 * purchase of this product", so its record lives beside the shopper's home segment of the product
 * (the segment's hash tag), and the same key sent for another product is another request. The
 * first request with a key
 * claims it with a short lease and the order id it will sell under; its final answer is stored
 * (IDEMPOTENCY_TTL_SECONDS) and replayed to a retry with the same request. A transient answer
 * (not started yet, unknown product, busy) is not stored: the retry runs again. A request that
 * ended without knowing whether it sold (a lost Redis reply), or whose process died (its lease ran
 * out), leaves a stale record: the next retry resolves it from the sale's own state (the order id
 * in the buyer's marker, or given up for good) before anything runs again.
 *
 * Records written before they moved there (one place per shopper, every product) are still read
 * on a miss while they may live (Keys.idempotencyLegacyUntil, set by a data migration).
 *
 * Bounded per shopper and product: at most `maxPerUser` records (lua/idempotencyClaim-3.lua); at the cap the
 * shopper's oldest final refusals are deleted first, and a shopper whose records all sold or are
 * running gets 429 until the oldest expires. Records are stored compactly (what a replay needs).
 *
 * This is the Redis side (keys, scripts, the record codec); services/purchase/idempotency.ts declares the
 * port the purchase use case takes.
 */
import { hash } from 'node:crypto';
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import type { MemoryHeadroom } from '../../redis/memory-headroom.js';
import type { Catalogue } from '../catalogue/catalogue.js';
import { claimRecord, settleRecord, swapRecord, type RecordPlace } from './protocol.js';
import { homeSegment } from '../layout.js';
import {
  decodeIdempotencyRecord,
  encodeIdempotencyRecord,
  type FoldedRecord,
  type IdempotencyRecord,
  type PurchaseAnswer,
} from '../records/idempotency-record.js';

export type { IdempotencyRecord, PurchaseAnswer };

/** A claimed key: where it lives (its record, the shopper's indexes) and what it holds now. */
export interface IdempotencyHandle {
  key: string;
  record: IdempotencyRecord;
  /** [the shopper's index of records, of final refusals] and the record's name in them */
  index: { keys: [string, string]; member: string };
}

export type Begin =
  | ({ kind: 'new' } & IdempotencyHandle)
  /** the key's request was answered: its final answer, to replay */
  | { kind: 'replay'; answer: PurchaseAnswer }
  /** the first request with this key is still running (its lease has not run out) */
  | { kind: 'in-progress'; orderId: string | undefined }
  /** the key was used with another request */
  | { kind: 'mismatch' }
  /** the shopper holds `maxPerUser` records that must stay: none frees before `retryAfterMs` */
  | { kind: 'full'; retryAfterMs: number }
  /** its request ended without an answer or died: resolve `record.orderId`, then take over */
  | ({ kind: 'stale'; raw: string } & IdempotencyHandle);

/** How often a process asks again whether legacy records may still live. */
const LEGACY_RECHECK_MS = 60_000;

type Place = { all: string; refusals: string; record(name: string): string };

export class IdempotencyStore {
  private legacy: { until: number; checkedAt: number } | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** the products' segment counts: a shopper's records live beside their home segment */
    private readonly catalogue: Pick<Catalogue, 'get'>,
    private readonly ttlSeconds: number,
    private readonly leaseMs: number,
    private readonly maxPerUser = 100,
    /** near maxmemory a refusal's record is not kept (docs/catalogue.md#redis-memory) */
    private readonly headroom?: MemoryHeadroom | undefined,
  ) {
    // known before the first keyed purchase (a failure here: the first one asks)
    void (this.legacyUntil() as Promise<number>).catch(() => undefined);
  }

  /** The key's record and index names in `place`. */
  private at(place: Place, key: string) {
    const member = hash('sha256', key, 'base64url');
    const rk = place.record(member);
    return {
      rk,
      prefix: rk.slice(0, rk.length - member.length),
      index: { keys: [place.all, place.refusals] as [string, string], member },
    };
  }

  /** Where the shopper's key for `productId` lives: beside their home segment of it. */
  private async where(userId: string, productId: string, key: string) {
    const got = this.catalogue.get(productId);
    const view = got instanceof Promise ? await got : got;
    // an unknown product answers 404, which is never stored: any segment will do
    const segment = view ? homeSegment(userId, view.segments) : 0;
    return { ...this.at(this.keys.idempotency(productId, segment, userId), key), segment };
  }

  /**
   * Until when (ms) old-place records may live: read at construction and again in the background
   * once a minute, so a purchase never waits on the shard that holds the window's key (it would
   * then depend on two); only a process that could not read it yet waits for it.
   */
  private legacyUntil(): number | Promise<number> {
    const now = Date.now();
    if (this.legacy && now - this.legacy.checkedAt <= LEGACY_RECHECK_MS) return this.legacy.until;
    const load = this.redis.get(this.keys.idempotencyLegacyUntil()).then((until) => {
      this.legacy = { until: Number(until ?? 0), checkedAt: Date.now() };
      return this.legacy.until;
    });
    if (!this.legacy) return load;
    this.legacy.checkedAt = now; // one refresh at a time; a failed one keeps what was known
    load.catch(() => undefined);
    return this.legacy.until;
  }

  /**
   * The key's record in the legacy place (per shopper, before records moved beside the home
   * segment), while records written there may live; else undefined, without a command.
   */
  private async legacyRecord(userId: string, key: string) {
    const got = this.legacyUntil();
    if ((got instanceof Promise ? await got : got) <= Date.now()) return undefined;
    const where = this.at(this.keys.legacyIdempotency(userId), key);
    const raw = await this.redis.get(where.rk);
    return raw === null ? undefined : { where, raw, record: decodeIdempotencyRecord(raw) };
  }

  /** A running record for `fresh`'s request, leased from now. */
  private running(fresh: Omit<IdempotencyRecord, 'leaseUntil'>): IdempotencyRecord {
    return { ...fresh, leaseUntil: Date.now() + this.leaseMs };
  }

  /**
   * The key's record, read only (one GET): how a refusal the guard already knows answers a keyed
   * request without storing anything. Undefined: the key holds nothing.
   */
  async peek(
    userId: string,
    productId: string,
    key: string,
  ): Promise<IdempotencyRecord | undefined> {
    const raw = await this.redis.get((await this.where(userId, productId, key)).rk);
    if (raw !== null) return decodeIdempotencyRecord(raw);
    const legacy = await this.legacyRecord(userId, key);
    return legacy && ofProduct(legacy.record, productId) ? legacy.record : undefined;
  }

  /** Claims the key for this request (with the order id it will sell under), or says what else. */
  async begin(
    userId: string,
    key: string,
    fresh: Omit<IdempotencyRecord, 'leaseUntil'> & { productId: string },
  ): Promise<Begin> {
    const legacy = await this.legacyRecord(userId, key);
    if (legacy && ofProduct(legacy.record, fresh.productId)) {
      return this.found(legacy.where, legacy.raw, fresh);
    }
    const { rk, prefix, index } = await this.where(userId, fresh.productId, key);
    const record = this.running(fresh);
    const claimed = await claimRecord(
      this.redis,
      { key: rk, index },
      {
        value: encodeIdempotencyRecord(record),
        ttlSeconds: this.ttlSeconds,
        cap: this.maxPerUser,
        prefix,
      },
    );
    if (claimed.code === 'claimed') return { kind: 'new', key: rk, record, index };
    if (claimed.code === 'full') return { kind: 'full', retryAfterMs: claimed.retryAfterMs };
    return this.found({ rk, index }, claimed.value, fresh);
  }

  /**
   * The key's record for the home deduct to read and write itself (keyed-deduct.ts), in the
   * state {@link begin} would leave it: its place, and the two values it may be given, encoded
   * here (a finished one answering `done`, and a running one leased from now, as begin's). The
   * handle is the running record's, for settling it after a spill as after {@link begin}.
   * Undefined while records in the legacy place may live: {@link begin} looks there first.
   */
  async fold(
    userId: string,
    key: string,
    fresh: Omit<IdempotencyRecord, 'leaseUntil'> & { productId: string },
    done: PurchaseAnswer,
  ): Promise<{ folded: FoldedRecord; handle: IdempotencyHandle } | undefined> {
    const legacyUntil = this.legacyUntil();
    if (typeof legacyUntil !== 'number' || legacyUntil > Date.now()) return undefined;
    const { rk, index, segment } = await this.where(userId, fresh.productId, key);
    const record = this.running(fresh);
    const folded: FoldedRecord = {
      keys: [rk, ...index.keys],
      member: index.member,
      segment,
      done: encodeIdempotencyRecord({ ...record, done }),
      running: encodeIdempotencyRecord(record),
      ttlSeconds: this.ttlSeconds,
      cap: this.maxPerUser,
    };
    return { folded, handle: { key: rk, record, index } };
  }

  /** What the folded deduct's request found in its key's record: as {@link begin} answers. */
  foundFolded(handle: IdempotencyHandle, raw: string): Begin {
    return this.found({ rk: handle.key, index: handle.index }, raw, handle.record);
  }

  /**
   * The folded deduct got no reply: if it left the running record (a spill claim), it is marked
   * unknown, so the next retry resolves it at once; a finished record, or anyone else's, stays.
   */
  async unknownIfRunning(folded: FoldedRecord, handle: IdempotencyHandle): Promise<void> {
    const marked = encodeIdempotencyRecord({ ...handle.record, unknown: true });
    await swapRecord(this.redis, handle.key, folded.running, marked);
  }

  /** What a request finds when its key holds a record already. */
  private found(
    where: { rk: string; index: IdempotencyHandle['index'] },
    raw: string,
    fresh: Pick<IdempotencyRecord, 'fp'>,
  ): Begin {
    const found = decodeIdempotencyRecord(raw);
    if (found.fp !== fresh.fp) return { kind: 'mismatch' };
    if (found.done) return { kind: 'replay', answer: found.done };
    if (found.unknown || (found.leaseUntil ?? 0) <= Date.now()) {
      return { kind: 'stale', key: where.rk, record: found, raw, index: where.index };
    }
    return { kind: 'in-progress', orderId: found.orderId };
  }

  /**
   * Takes a stale key over for a new run (with a new order id), or stores the answer its old run
   * turned out to have: only if nobody else did meanwhile.
   * @returns the new handle, or null when another retry got there first.
   */
  async takeOver(
    stale: { key: string; raw: string; index: IdempotencyHandle['index'] },
    next: IdempotencyRecord,
  ): Promise<IdempotencyHandle | null> {
    const record = next.done ? next : this.running(next);
    const swapped = await swapRecord(
      this.redis,
      stale.key,
      stale.raw,
      encodeIdempotencyRecord(record),
    );
    return swapped ? { key: stale.key, record, index: stale.index } : null;
  }

  /**
   * Stores the final answer (kept until the key's expiry). A refusal may be evicted at the
   * shopper's cap; an answer that sold never is. Near maxmemory a refusal is not kept at all (as
   * if evicted at once: a retry runs again), so records give way before the sale's writes do.
   */
  async finish(handle: IdempotencyHandle, answer: PurchaseAnswer): Promise<void> {
    if (answer.kind === 'refused' && (await this.headroom?.short(handle.key))) {
      return this.abandon(handle);
    }
    const rec = encodeIdempotencyRecord({ ...handle.record, done: answer });
    await this.settle(handle, answer.kind === 'refused' ? 'refused' : 'store', rec);
  }

  /** Nothing was sold and the answer is not final: forget the key, so a retry runs again. */
  async abandon(handle: IdempotencyHandle): Promise<void> {
    await this.settle(handle, 'forget', '');
  }

  /** The purchase ended without knowing whether it sold: the next retry resolves it. */
  async markUnknown(handle: IdempotencyHandle): Promise<void> {
    await this.settle(
      handle,
      'store',
      encodeIdempotencyRecord({ ...handle.record, unknown: true }),
    );
  }

  private settle(handle: IdempotencyHandle, mode: 'store' | 'refused' | 'forget', value: string) {
    return settleRecord(this.redis, handle satisfies RecordPlace, mode, value);
  }
}

/**
 * Whether a legacy record (one place per shopper, every product) is this product's: a running
 * one names its product; an answered one kept only its fingerprint, so it keeps its old scope
 * (the same key for another product is a 422, as when it was written).
 */
const ofProduct = (record: IdempotencyRecord, productId: string) =>
  record.productId === undefined || record.productId === productId;
