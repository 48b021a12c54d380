/**
 * A waiting room's Redis side (lua/roomJoin-4.lua, lua/roomAdmit-6.lua): join, read a place, one
 * admitter tick, and a seat freed by a purchase. Every key of a room shares the product's hash tag
 * (one Cluster slot with its meta and events channel): a join and a tick are single scripts.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys, RoomKeys } from '../../redis/keys.js';
import { luaScript } from '../../redis/scripts.js';
import { readProductState, type ProductState } from '../catalogue/product-state.js';
import { encodeEvent } from '../records/product-events.js';
import type { RoomSettings } from '../records/product-meta.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';

const scripts = {
  roomJoin: luaScript('roomJoin'),
  roomAdmit: luaScript('roomAdmit'),
};

/**
 * Pre-queue places one admit call shuffles: each is ~5 hash writes, so a call stays within a few
 * milliseconds of the shard's time however long the pre-queue (measured: docs/waiting-room.md).
 */
export const SHUFFLE_STEPS = 1_000;

/** The room keys outlive the sale's end by this long (then the line is gone). */
const ROOM_KEEP_S = 86_400;

/** A shopper's place, as Redis holds it. */
export interface RoomPlace {
  /** 0 while in the pre-queue (shuffled at the opening) */
  ticket: number;
  served: number;
  opened: boolean;
  /** shoppers in the pre-queue (before the opening) */
  preCount: number;
  /** when the shopper was admitted (ms); 0 while waiting */
  admittedAt: number;
}

export type AdmitTick =
  | {
      code: 'ticked';
      served: number;
      next: number;
      admitted: number;
      /** admissions that ran out unused just now (no-shows: their seats are free again) */
      expired: number;
      active: number;
      now: number;
      opened: boolean;
      /** pre-queue places not yet shuffled into tickets (admission waits for them) */
      shuffleLeft: number;
    }
  | { code: 'fenced'; newer: number };

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
  /** pre-queue places this call shuffles at most (default SHUFFLE_STEPS) */
  shuffleSteps?: number | undefined;
  /** the room's freed-seat count ({@link RoomStore.doneCount}) read before `unitsLeft` */
  doneAtRead: number;
}

const keepSeconds = (endsAt: number) =>
  Math.max(ROOM_KEEP_S, Math.ceil((endsAt - Date.now()) / 1_000) + ROOM_KEEP_S);

const roomKeyList = (room: RoomKeys) => [room.room, room.places, room.pre, room.line];

export class RoomStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** durable mode: a place or an admission is answered once the replicas hold it */
    private readonly replicaWait?: ReplicaWait | undefined,
  ) {}

  /**
   * Joins (or finds) the shopper's place: `joined` false when it was there already; `full` when
   * the room holds `maxPlaces` already and this shopper is not among them (nothing written).
   */
  async join(
    productId: string,
    sale: { epoch: number; endsAt: number },
    userId: string,
    maxPlaces: number,
  ): Promise<(RoomPlace & { joined: boolean; full?: undefined }) | { full: true }> {
    const k = this.keys.room(productId, sale.epoch);
    const r = await scripts.roomJoin.run<number[]>(this.redis, roomKeyList(k), [
      userId,
      keepSeconds(sale.endsAt),
      maxPlaces,
    ]);
    if (r[0] === -1) return { full: true };
    const [joined, ticket, served, opened, preCount] = r as [
      number,
      number,
      number,
      number,
      number,
    ];
    // a second join answers the place too: confirmed as well, since the first one's WAIT may
    // have failed (503) and left the place on the master alone
    await this.replicaWait?.confirm(k.room);
    let admittedAt = 0;
    if (ticket > 0 && ticket <= served) admittedAt = await this.admittedAt(k, userId);
    return { joined: joined === 1, ticket, served, opened: opened === 1, preCount, admittedAt };
  }

  /** The shopper's place; null when they never joined this sale's room. */
  async place(productId: string, epoch: number, userId: string): Promise<RoomPlace | null> {
    const k = this.keys.room(productId, epoch);
    const [[, ticket], [, state], [, at]] = (await this.redis
      .multi()
      .hget(k.places, userId)
      .hmget(k.room, 'served', 'opened', 'pre')
      .hget(k.admitted, userId)
      .exec()) as [[null, string | null], [null, Array<string | null>], [null, string | null]];
    if (ticket === null) return null;
    // read from the master: answered once a replica holds it (a join refused 503 may not be)
    await this.replicaWait?.confirm(k.room);
    return {
      ticket: Number(ticket),
      served: Number(state[0] ?? 0),
      opened: state[1] === '1',
      preCount: Number(state[2] ?? 0),
      admittedAt: Number(at ?? 0),
    };
  }

  private async admittedAt(room: RoomKeys, userId: string): Promise<number> {
    return Number((await this.redis.hget(room.admitted, userId)) ?? 0);
  }

  /** One admitter tick (lua/roomAdmit-6.lua); tells every process the served counter. */
  async admit(productId: string, tick: AdmitArgs, announce: boolean): Promise<AdmitTick> {
    const a = tick;
    const k = this.keys.room(productId, a.epoch);
    const s = a.settings;
    const r = await scripts.roomAdmit.run<number[]>(
      this.redis,
      [...roomKeyList(k), k.active, k.admitted],
      [
        a.fence,
        a.startsAt,
        a.seed,
        s.admitPerSecond,
        s.maxActive,
        s.admittedForSeconds * 1_000,
        a.soldOut ? 1 : 0,
        keepSeconds(a.endsAt),
        a.unitsLeft,
        a.shuffleSteps ?? SHUFFLE_STEPS,
        a.limitPerUser,
        a.doneAtRead,
      ],
    );
    if (r[0] === 0) return { code: 'fenced', newer: r[1]! };
    const [, served, next, admitted, expired, active, now, opened, shuffleLeft] = r as number[] as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    if (admitted > 0 || expired > 0) await this.replicaWait?.confirm(k.room);
    if (opened === 1 && (admitted > 0 || announce)) {
      await this.redis.spublish(
        this.keys.product(productId).events,
        encodeEvent({ kind: 'admit', epoch: a.epoch, served, at: now }),
      );
    }
    return {
      code: 'ticked',
      served,
      next,
      admitted,
      expired,
      active,
      now,
      opened: opened === 1,
      shuffleLeft,
    };
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
    await this.redis.multi().zrem(k.active, userId).hincrby(k.room, 'done', 1).exec();
  }

  /** Seats freed by purchases so far: read before the units left, for {@link admit}. */
  async doneCount(productId: string, epoch: number): Promise<number> {
    return Number((await this.redis.hget(this.keys.room(productId, epoch).room, 'done')) ?? 0);
  }
}
