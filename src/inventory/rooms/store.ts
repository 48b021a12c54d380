/**
 * A waiting room's Redis side: join, read a place, one admitter tick (their scripts through
 * protocol.ts), and a seat freed by a purchase. Every key of a room shares the product's hash tag
 * (one Cluster slot with its meta and events channel): a join and a tick are single scripts.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys, RoomKeys } from '../../redis/keys.js';
import { readProductState, type ProductState } from '../catalogue/product-state.js';
import { encodeEvent } from '../records/product-events.js';
import type { RoomSettings } from '../records/product-meta.js';
import { ROOM_FIELD } from '../records/hash-fields.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import type { MemoryHeadroom } from '../../redis/memory-headroom.js';
import { storeFull } from '../../outages.js';
import { admitRoom, freeSeat, joinRoom, readPlace, type AdmitReply } from './protocol.js';

/**
 * Lobby places one admit call shuffles: each is ~5 hash writes, so a call stays within a few
 * milliseconds of the shard's time however long the lobby (measured: docs/waiting-room.md).
 */
export const SHUFFLE_STEPS = 1_000;

/** The room keys outlive the sale's end by this long (then the line is gone). */
const ROOM_KEEP_S = 86_400;

/** A shopper's place, as Redis holds it. */
export interface RoomPlace {
  /** 0 while in the lobby (shuffled at the opening) */
  ticket: number;
  served: number;
  opened: boolean;
  /** shoppers in the lobby (before the opening) */
  lobbyCount: number;
  /** when the shopper was admitted (ms); 0 while waiting */
  admittedAt: number;
}

export type AdmitTick = AdmitReply;

export interface AdmitArgs {
  epoch: number;
  fence: number;
  startsAt: number;
  endsAt: number;
  seed: number;
  settings: RoomSettings;
  soldOut: boolean;
  /** units left on sale; -1 when unknown */
  unitsLeft: number;
  /** units one admitted shopper may buy */
  limitPerUser: number;
  /** lobby places this call shuffles at most (default SHUFFLE_STEPS) */
  shuffleSteps?: number | undefined;
  /** the room's freed-seat count ({@link RoomStore.doneCount}) read before `unitsLeft` */
  doneAtRead: number;
}

const keepSeconds = (endsAt: number) =>
  Math.max(ROOM_KEEP_S, Math.ceil((endsAt - Date.now()) / 1_000) + ROOM_KEEP_S);

export class RoomStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** durable mode: a place or an admission is answered once the replicas hold it */
    private readonly replicaWait?: ReplicaWait | undefined,
    /** near maxmemory no new place is written (docs/catalogue.md#redis-memory) */
    private readonly headroom?: MemoryHeadroom | undefined,
  ) {}

  /**
   * Joins (or finds) the shopper's place: `joined` false when it was there already; `full` when
   * the room holds `maxPlaces` already and this shopper is not among them; `short` when its Redis
   * node is near its maxmemory (or past it) and this shopper holds no place (nothing written).
   */
  async join(
    productId: string,
    sale: { epoch: number; endsAt: number },
    userId: string,
    maxPlaces: number,
  ): Promise<
    (RoomPlace & { joined: boolean; refused?: undefined }) | { refused: 'full' | 'short' }
  > {
    const k = this.keys.room(productId, sale.epoch);
    if (await this.headroom?.short(k.room)) return this.heldOnly(productId, sale.epoch, userId);
    let r;
    try {
      r = await joinRoom(this.redis, k, {
        userId,
        keepSeconds: keepSeconds(sale.endsAt),
        maxPlaces,
      });
    } catch (err) {
      // refused at its first write: nothing written, and the place may be there already
      if (!storeFull(err)) throw err;
      this.headroom?.refused(k.room);
      return this.heldOnly(productId, sale.epoch, userId);
    }
    if (r.code === 'full') return { refused: 'full' };
    const { ticket, served, opened, lobbyCount } = r;
    // a second join answers the place too: confirmed as well, since the first one's WAIT may
    // have failed (503) and left the place on the master alone
    await this.replicaWait?.confirm(k.room);
    let admittedAt = 0;
    if (ticket > 0 && ticket <= served) admittedAt = await this.admittedAt(k, userId);
    return { joined: r.code === 'joined', ticket, served, opened, lobbyCount, admittedAt };
  }

  /** A join that writes nothing: the shopper's place if they hold one, else refused `short`. */
  private async heldOnly(
    productId: string,
    epoch: number,
    userId: string,
  ): Promise<(RoomPlace & { joined: false }) | { refused: 'short' }> {
    const place = await this.place(productId, epoch, userId);
    return place ? { ...place, joined: false } : { refused: 'short' };
  }

  /** The shopper's place; null when they never joined this sale's room. */
  async place(productId: string, epoch: number, userId: string): Promise<RoomPlace | null> {
    const k = this.keys.room(productId, epoch);
    const place = await readPlace(this.redis, k, userId);
    if (!place) return null;
    // read from the master: answered once a replica holds it (a join refused 503 may not be)
    await this.replicaWait?.confirm(k.room);
    return place;
  }

  private async admittedAt(room: RoomKeys, userId: string): Promise<number> {
    return Number((await this.redis.hget(room.admitted, userId)) ?? 0);
  }

  /** One admitter tick (lua/roomAdmit-6.lua); tells every process the served counter. */
  async admit(productId: string, tick: AdmitArgs, announce: boolean): Promise<AdmitTick> {
    const k = this.keys.room(productId, tick.epoch);
    const { settings } = tick;
    const r = await admitRoom(this.redis, k, {
      fence: tick.fence,
      startsAt: tick.startsAt,
      seed: tick.seed,
      admitPerSecond: settings.admitPerSecond,
      maxActive: settings.maxActive,
      admittedForMs: settings.admittedForSeconds * 1_000,
      soldOut: tick.soldOut,
      keepSeconds: keepSeconds(tick.endsAt),
      unitsLeft: tick.unitsLeft,
      shuffleSteps: tick.shuffleSteps ?? SHUFFLE_STEPS,
      limitPerUser: tick.limitPerUser,
      doneAtRead: tick.doneAtRead,
    });
    if (r.code === 'fenced') return r;
    if (r.admitted > 0 || r.expired > 0) await this.replicaWait?.confirm(k.room);
    if (r.opened && (r.admitted > 0 || announce)) {
      await this.redis.spublish(
        this.keys.product(productId).events,
        encodeEvent({ kind: 'admit', epoch: tick.epoch, served: r.served, at: r.now }),
      );
    }
    return r;
  }

  /** Products seeded with a waiting room. */
  rooms(): Promise<string[]> {
    return this.redis.smembers(this.keys.rooms());
  }

  /** The product's segments as they stand (the admitter bounds admission by the units left). */
  stock(productId: string): Promise<ProductState | null> {
    return readProductState({ redis: this.redis, keys: this.keys }, productId);
  }

  /**
   * The shopper bought: their seat is free for the next in line, and the room counts it (the
   * admitter bounds admission by a units read that may not have seen this purchase yet).
   */
  async done(productId: string, epoch: number, userId: string): Promise<void> {
    const k = this.keys.room(productId, epoch);
    await freeSeat(this.redis, k, userId);
  }

  /** Seats freed by purchases so far: read before the units left, for {@link admit}. */
  async doneCount(productId: string, epoch: number): Promise<number> {
    return Number(
      (await this.redis.hget(this.keys.room(productId, epoch).room, ROOM_FIELD.done)) ?? 0,
    );
  }
}
