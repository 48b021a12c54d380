/**
 * Who tried in each sale, noted off the request path (docs/fairness.md): a join, a sale token
 * asked, a challenge failed is put in memory at once (no await, no round trip) and written by
 * one batch per sale every FLUSH_MS (HSETNX per identity, HINCRBY per failure), so the report's E
 * costs the door nothing. The first batch of a sale pins its rules (SET NX).
 */
import type { Tried } from './figures.js';

/** A sale's notes in Redis (access/'s store). */
export interface FairnessStore {
  /** writes a batch: identities first seen (kept as first seen), failures added, rules pinned */
  write(
    productId: string,
    epoch: number,
    batch: {
      seen: Tried[];
      fails: Map<string, number>;
      decoys: Map<string, number>;
      rules: string;
    },
  ): Promise<void>;
  read(
    productId: string,
    epoch: number,
  ): Promise<{
    seen: Tried[];
    fails: Map<string, number>;
    decoys: Map<string, number>;
    rules: string | null;
  }>;
}

export const FLUSH_MS = 200;

interface Pending {
  productId: string;
  epoch: number;
  seen: Map<string, Tried>;
  fails: Map<string, number>;
  decoys: Map<string, number>;
}

/** What a shopper sends the door: the challenge's answer, and what the notes keep of them. */
export interface DoorAnswer extends TriedAt {
  /** the challenge's answer (the Challenge header) */
  challenge?: string | undefined;
}

/** What a door knows of a shopper beyond their id and address. */
export interface TriedAt {
  /** the device or payment fingerprint the shop passed (Shopper-Fingerprint) */
  fingerprint?: string | undefined;
  /** when their account was made (ms), from the shop's token (FAIRNESS_ACCOUNT_AGE_CLAIM) */
  accountCreatedAt?: number | undefined;
}

export class FairnessNotes {
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: {
      store: FairnessStore;
      /** the rules' canonical text, pinned by a sale's first batch */
      rules: string;
      blockOf: (ip: string) => string;
      onError: (err: unknown) => void;
      now?: () => number;
    },
  ) {}

  /** `userId` tried `productId`'s sale `epoch` from `ip` (with what the door knows of them). */
  tried(productId: string, epoch: number, userId: string, ip: string, at: TriedAt = {}): void {
    const p = this.of(productId, epoch);
    if (!p.seen.has(userId)) {
      const { fingerprint, accountCreatedAt } = at;
      p.seen.set(userId, {
        userId,
        block: this.deps.blockOf(ip),
        ...(fingerprint && { fingerprint }),
        ...(ip && { address: ip }),
        at: (this.deps.now ?? Date.now)(),
        ...(accountCreatedAt !== undefined && { accountCreatedAt }),
      });
    }
  }

  /** `userId` followed the queue page's decoy link (and tried, so is noted too). */
  followedDecoy(productId: string, epoch: number, userId: string, ip: string): void {
    this.tried(productId, epoch, userId, ip);
    const p = this.of(productId, epoch);
    p.decoys.set(userId, (p.decoys.get(userId) ?? 0) + 1);
  }

  /** `userId` sent a missing or failed challenge (and tried, so is noted too). */
  failed(productId: string, epoch: number, userId: string, ip: string): void {
    this.tried(productId, epoch, userId, ip);
    const p = this.of(productId, epoch);
    p.fails.set(userId, (p.fails.get(userId) ?? 0) + 1);
  }

  /** Writes what is pending now (the timer does it every FLUSH_MS; tests and shutdown call it). */
  flush(): Promise<void> {
    const batches = [...this.pending.values()];
    this.pending = new Map();
    const rules = this.deps.rules;
    this.flushing = this.flushing.then(() =>
      Promise.all(
        batches.map((b) =>
          this.deps.store
            .write(b.productId, b.epoch, {
              seen: [...b.seen.values()],
              fails: b.fails,
              decoys: b.decoys,
              rules,
            })
            .catch(this.deps.onError),
        ),
      ).then(() => undefined),
    );
    return this.flushing;
  }

  stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    return this.flush();
  }

  private of(productId: string, epoch: number): Pending {
    const key = `${productId}|${epoch}`;
    let p = this.pending.get(key);
    if (!p) {
      p = { productId, epoch, seen: new Map(), fails: new Map(), decoys: new Map() };
      this.pending.set(key, p);
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, FLUSH_MS);
    this.timer.unref?.();
    return p;
  }
}
