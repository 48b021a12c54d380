/**
 * Every Redis key and channel name the product uses, and the only place hash tags are chosen.
 *
 * A lock `L` lives under the tag `{L}`: its hash, fence counter, unlock channel and fair-queue keys
 * share one Redis Cluster slot, so one script can touch them all. A product segment's lock is
 * named by the segment's tag (`P:i`, or `P:i/k` to land in its slot window: spread.ts), so it
 * shares the tag with the segment's stock, buyers and outbox: everything one deduct touches is
 * in one slot, and a product's segments spread evenly over the shards of a cluster.
 */

import { createHash } from 'node:crypto';
import { ID_PATTERN } from '../ids.js';
import { spreadTag } from './spread.js';

export { ID_PATTERN };

export class InvalidKeyPartError extends Error {
  constructor(what: string, value: string) {
    super(`invalid ${what} ${JSON.stringify(value)}: must match ${ID_PATTERN}`);
    this.name = 'InvalidKeyPartError';
  }
}

function checked(what: string, value: string, pattern = ID_PATTERN): string {
  if (!pattern.test(value)) throw new InvalidKeyPartError(what, value);
  return value;
}

/** A short, key-safe name of a free-form key part (an address block, a provider's token). */
const digest = (part: string) => createHash('sha256').update(part).digest('base64url').slice(0, 22);

/** Lock names: ids, or a segment's spread tag (an id, `:i`, maybe `/k`). */
const LOCK_NAME_PATTERN = /^[A-Za-z0-9_.:/-]{1,160}$/;

export interface LockKeys {
  /** hash owner -> reentry count; PEXPIRE is the lease */
  lock: string;
  /** INCR'd on every first acquisition: the fencing token */
  fence: string;
  /** prefix of the unlock notice channels: each waiting process listens on prefix + its id */
  channel: string;
  /** zset of waiting owners by arrival, oldest first (both modes) */
  queue: string;
  /** the waiter a release woke: the free lock is kept for it a short while (PX) */
  handoff: string;
}

export interface SegmentKeys {
  /** hash: stock, sold, sale window, limit, epoch, last accepted fence */
  state: string;
  /** hash userId -> purchase marker, for users whose home segment this is */
  buyers: string;
  /** hash userId -> open spill claim (small; the sweeper reads it whole) */
  claims: string;
  /** stream of orders deducted here and not yet confirmed persisted */
  outbox: string;
  /** hash orderId -> units of cancelled, expired and refunded orders returned to this segment (restock) */
  returned: string;
  /** hash orderId -> units of the spill sales this segment gave units to, until returned */
  spilled: string;
  /** the segment's lock (named `P:i`) */
  lock: LockKeys;
  /**
   * written by the sweeper in durable mode before it takes outbox entries: a WAIT after this
   * write proves the replicas hold every earlier write of the slot (the entries among them)
   */
  replicated: string;
  /** marks an order id given up after an unknown outcome: a late deduct of it is refused */
  voided(orderId: string): string;
  /** a shopper's rate-limit bucket on `route` in this segment's slot ({@link Keys.shopperRateLimit}) */
  shopperRateLimit(route: string, userId: string): string;
}

export interface ProductKeys {
  /** hash: product config + epoch */
  meta: string;
  /** channel for sold-out / segment-empty / reseed notices */
  events: string;
}

/** A product's waiting room in one sale epoch (docs/waiting-room.md): all in the product's slot. */
export interface RoomKeys {
  /** hash: next ticket, served counter, opened, lobby length, fence, pacing credit */
  room: string;
  /** hash userId -> ticket (0 while in the lobby) */
  places: string;
  /** hash arrival index -> userId: the lobby, until the opening's shuffle (its key: `:pre`) */
  lobby: string;
  /** hash ticket -> userId */
  line: string;
  /** zset userId -> admission expiry (ms): admitted and not yet done */
  active: string;
  /** hash userId -> admission time (ms) */
  admitted: string;
  /** hash userId -> the shopper's Web Push subscription (JSON): their turn's notices */
  push: string;
}

/** A product's draw in one sale epoch (docs/draw.md): in the product's slot, beside its room. */
export interface DrawKeys {
  /** hash: entries taken and held, the close, the admitter's fence (includes/drawState.lua) */
  draw: string;
  /** hash userId -> entry record (entry id, address block, number) */
  entries: string;
}

export class Keys {
  constructor(readonly prefix: string) {}

  lock(name: string): LockKeys {
    const tag = `${this.prefix}:{${checked('lock name', name, LOCK_NAME_PATTERN)}}`;
    return {
      lock: `${tag}:lock`,
      fence: `${tag}:fence`,
      channel: `${tag}:unlocked:`,
      queue: `${tag}:line`,
      handoff: `${tag}:handoff`,
    };
  }

  /** A rate limit's bucket: `route` (seckill, token), `kind` (user, ip) and who. */
  rateLimit(route: string, kind: string, id: string): string {
    return `${this.prefix}:rl:${route}:${kind}:${id}`;
  }

  /**
   * A shopper's rate-limit bucket on a product's purchase route, beside their home segment of that
   * product (the segment's hash tag): the keys a purchase needs of its own share one slot, so it
   * depends on one shard (docs/scale-out.md, blast radius).
   */
  shopperRateLimit(route: string, productId: string, segment: number, userId: string): string {
    return this.segment(productId, segment).shopperRateLimit(route, userId);
  }

  /** Wrong admin tokens sent from a client address (a rate limit's bucket). */
  adminGuesses(address: string): string {
    return `${this.prefix}:admin:guesses:${address}`;
  }

  /** Channel of "fetch the identity provider's keys again now", heard by every API process. */
  jwksRefresh(): string {
    return `${this.prefix}:admin:jwks-refresh`;
  }

  /** A dashboard / Bull Board session: exists while the session is open. */
  adminSession(id: string): string {
    return `${this.prefix}:admin:session:${checked('session id', id)}`;
  }

  product(productId: string): ProductKeys {
    const tag = `${this.prefix}:{${checked('product id', productId)}}`;
    return { meta: `${tag}:meta`, events: `${tag}:events` };
  }

  /** The waiting room of a product's sale `epoch`: a new sale starts a new line. */
  room(productId: string, epoch: number): RoomKeys {
    const base = `${this.prefix}:{${checked('product id', productId)}}:room:${epoch}`;
    return {
      room: base,
      places: `${base}:places`,
      lobby: `${base}:pre`,
      line: `${base}:line`,
      active: `${base}:active`,
      admitted: `${base}:admitted`,
      push: `${base}:push`,
    };
  }

  /** The draw of a product's sale `epoch`: a new sale starts a new draw. */
  draw(productId: string, epoch: number): DrawKeys {
    const base = `${this.prefix}:{${checked('product id', productId)}}:draw:${epoch}`;
    return { draw: base, entries: `${base}:entries` };
  }

  /** Who tried a product's sale `epoch` (docs/fairness.md): all in the product's slot. */
  fairness(
    productId: string,
    epoch: number,
  ): {
    seen: string;
    fails: string;
    decoys: string;
    rules: string;
    reported: string;
    finalSince: string;
  } {
    const base = `${this.prefix}:{${checked('product id', productId)}}:fair:${epoch}`;
    return {
      seen: `${base}:seen`,
      fails: `${base}:fails`,
      decoys: `${base}:decoys`,
      rules: `${base}:rules`,
      reported: `${base}:reported`,
      finalSince: `${base}:final`,
    };
  }

  /**
   * The door's challenge state (docs/fairness.md): an address block's identities and flags share
   * the block's slot; an identity's flags, a claimed answer and an issue's spacing are keys of
   * their own. The parts are hashed: blocks and provider tokens are not ids.
   */
  door(): {
    block(block: string): { identities: string; flags: string };
    userFlags(userId: string): string;
    claimed(id: string): string;
    spaced(who: string): string;
  } {
    const base = `${this.prefix}:door`;
    return {
      block: (block) => {
        const tag = `${base}:{b:${digest(block)}}`;
        return { identities: `${tag}:ids`, flags: `${tag}:flags` };
      },
      userFlags: (userId) => `${base}:u:${checked('user id', userId)}:flags`,
      claimed: (id) => `${base}:claimed:${digest(id)}`,
      spaced: (who) => `${base}:spaced:${digest(who)}`,
    };
  }

  /** Set of product ids seeded with a waiting room (the admitters walk it). */
  rooms(): string {
    return `${this.prefix}:rooms`;
  }

  /** The lock name of segment `segment` of a product: its spread hash tag (see spread.ts). */
  segmentLockName(productId: string, segment: number): string {
    return spreadTag(checked('product id', productId), segment);
  }

  segment(productId: string, index: number): SegmentKeys {
    const name = this.segmentLockName(productId, index);
    const tag = `${this.prefix}:{${name}}`;
    return {
      state: `${tag}:state`,
      buyers: `${tag}:buyers`,
      claims: `${tag}:claims`,
      outbox: `${tag}:outbox`,
      returned: `${tag}:returned`,
      spilled: `${tag}:spilled`,
      lock: this.lock(name),
      replicated: `${tag}:replicated`,
      voided: (orderId) => `${tag}:void:${checked('order id', orderId)}`,
      shopperRateLimit: (route, userId) => `${tag}:rl:${route}:user:${userId}`,
    };
  }

  /** Set of product ids ever seeded: the catalogue, archived sales included. */
  products(): string {
    return `${this.prefix}:products`;
  }

  /**
   * Zset of the products that may have work (product id -> ms until which it stays): the sweeper
   * walks only these; a sale that has been quiet for a while leaves it (archived). See
   * inventory/catalogue/active-set.ts.
   */
  active(): string {
    return `${this.prefix}:active`;
  }

  /**
   * Beside the active set, in its slot (the tag is its whole name): `touches`, a zset of each
   * product's last touch (Redis ms), and `quiet`, a hash of when the sweeper last found a product
   * with no work (`<found at ms>:<its active score then>`). A product untouched since it was found
   * quiet has no new work: the sweeper reads none of its segments.
   */
  activity(): { touches: string; quiet: string } {
    const tag = `{${this.prefix}:active}`;
    return { touches: `${tag}:touches`, quiet: `${tag}:quiet` };
  }

  /**
   * Hash of catalogue numbers: `n:<number>` -> product id, `p:<product id>` -> number, `seq` ->
   * the last number given. An order id carries its product's number (inventory/order-ids.ts).
   */
  catalogue(): string {
    return `${this.prefix}:{catalogue}`;
  }

  /** Hash of the Redis data migrations applied (name -> when), like the SQL migrator's table. */
  dataMigrations(): string {
    return `${this.prefix}:data-migrations`;
  }

  /**
   * A shopper's Idempotency-Key records for one product, beside their home segment of it (the
   * segment's hash tag, like their rate-limit bucket): a keyed purchase's record, claim and
   * deduct share one slot, so it depends on one shard. `all` and `refusals` index them (record
   * name -> expiry ms): all of them and the final refusals among them; `record(name)` is one.
   */
  idempotency(
    productId: string,
    segment: number,
    userId: string,
  ): { all: string; refusals: string; record(name: string): string } {
    const tag = `${this.prefix}:{${this.segmentLockName(productId, segment)}}`;
    const base = `${tag}:idem:${checked('user id', userId)}`;
    return { all: `${base}#all`, refusals: `${base}#refused`, record: (name) => `${base}:${name}` };
  }

  /**
   * Where a shopper's records lived before they moved beside the home segment (one hash tag per
   * shopper, every product): still read while records written there may live
   * (idempotencyLegacyUntil).
   */
  legacyIdempotency(userId: string): {
    all: string;
    refusals: string;
    record(name: string): string;
  } {
    const tag = `${this.prefix}:{idem:${checked('user id', userId)}}`;
    return { all: `${tag}#all`, refusals: `${tag}#refused`, record: (name) => `${tag}:${name}` };
  }

  /** Ms (server time) until which records in the legacy place may live; absent: none can. */
  idempotencyLegacyUntil(): string {
    return `${this.prefix}:idem-legacy-until`;
  }
}
/** Segment keys of a product, built once per (product, segment). */
export class SegmentKeyCache {
  private readonly cache = new Map<string, SegmentKeys[]>();
  constructor(private readonly keys: Keys) {}

  of(productId: string, segment: number): SegmentKeys {
    let list = this.cache.get(productId);
    if (!list) {
      if (this.cache.size > 10_000) this.cache.clear();
      list = [];
      this.cache.set(productId, list);
    }
    return (list[segment] ??= this.keys.segment(productId, segment));
  }
}
