/**
 * A waiting room's Redis side: join, read a place, one admitter tick (their scripts through
 * protocol.ts), a seat freed by a purchase, and the room's notices (admissions, its sleep, a
 * wake). Every key of a room shares the product's hash tag (one Cluster slot with its meta and
 * events channel): a join and a tick are single scripts.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys, RoomKeys } from '../../redis/keys.js';
import { readSegmentStock, type SegmentStock } from '../catalogue/product-state.js';
import type { RoomNotices } from '../catalogue/room-notices.js';
import { encodeEvent, type RoomSleep, type WakeCause } from '../records/product-events.js';
import type { RoomSettings } from '../records/product-meta.js';
import { ROOM_FIELD } from '../records/hash-fields.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import type { MemoryHeadroom } from '../../redis/memory-headroom.js';
import { storeFull } from '../../outages.js';
import {
  admitRoom,
  freeSeat,
  joinRoom,
  readPlace,
  soldOutBatch,
  type AdmitReply,
  type SoldOutReply,
} from './protocol.js';

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
  /** the room may go to sleep if this tick admits nobody (default false) */
  mayIdle?: boolean | undefined;
  /** admissions ending within this many ms are named, once (default 0: never) */
  expiringLeadMs?: number | undefined;
}

/** What an admitter that let a room go to sleep tells the other processes. */
export interface RoomSleepNotice {
  epoch: number;
  served: number;
  /** Redis ms of the tick */
  at: number;
  fence: number;
  sleep: RoomSleep;
  /** when the room is looked at again anyway (ms from now; 0: only when a notice wakes it) */
  lookInMs: number;
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
    /** this process's admitters: a wake sent from here acts here at once, notice or not */
    private readonly notices?: RoomNotices | undefined,
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
    if (r.woke) this.wake(productId, sale.epoch, 'join');
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
      mayIdle: tick.mayIdle === true,
      expiringLeadMs: tick.expiringLeadMs ?? 0,
    });
    if (r.code === 'fenced') return r;
    // a sleep a join or a freed seat ends is in the room hash: a failover must not lose it
    const flagged = r.sleep === 'join' || r.sleep === 'seat';
    if (r.admitted > 0 || r.expired > 0 || flagged) await this.replicaWait?.confirm(k.room);
    const awake = r.sleep === '' || r.sleep === 'units';
    if (r.opened && awake && (r.admitted > 0 || announce)) {
      await this.publish(productId, {
        kind: 'admit',
        epoch: tick.epoch,
        served: r.served,
        at: r.now,
        fence: tick.fence,
      });
    }
    return r;
  }

  /**
   * The next batch of the shoppers waiting in a room sold out for good (lua/roomSoldOut-2.lua),
   * once those up to ticket `writtenTo` were told (sold-out-walk.ts).
   */
  soldOutBatch(
    productId: string,
    epoch: number,
    call: { fence: number; writtenTo: number; size: number },
  ): Promise<SoldOutReply> {
    return soldOutBatch(this.redis, this.keys.room(productId, epoch), call);
  }

  /** Tells every process the room sleeps (its admitter let go of it), with its served counter. */
  async asleep(productId: string, notice: RoomSleepNotice): Promise<void> {
    await this.publish(productId, { kind: 'asleep', ...notice });
  }

  /**
   * Wakes a sleeping room: this process's admitter acts at once, and every process hears it. Not
   * waited for: a notice that fails to go out is one this process already acted on.
   */
  wake(productId: string, epoch: number, cause: WakeCause): void {
    this.notices?.tell(productId, { kind: 'wake', cause });
    this.publish(productId, { kind: 'wake', epoch, cause }).catch(() => undefined);
  }

  private async publish(productId: string, event: Parameters<typeof encodeEvent>[0]) {
    await this.redis.spublish(this.keys.product(productId).events, encodeEvent(event));
  }

  /** Products seeded with a waiting room. */
  rooms(): Promise<string[]> {
    return this.redis.smembers(this.keys.rooms());
  }

  /**
   * The stock of some of the product's segments (the admitter bounds admission by the units
   * left); null when a segment holds another epoch.
   */
  units(
    productId: string,
    epoch: number,
    segments: readonly number[],
  ): Promise<SegmentStock[] | null> {
    return readSegmentStock({ redis: this.redis, keys: this.keys }, productId, epoch, segments);
  }

  /**
   * The shopper bought: their seat is free for the next in line, and the room counts it (the
   * admitter bounds admission by a units read that may not have seen this purchase yet). A room
   * asleep on its seats is woken.
   */
  async done(productId: string, epoch: number, userId: string): Promise<void> {
    const k = this.keys.room(productId, epoch);
    const { woke } = await freeSeat(this.redis, k, userId);
    if (woke) this.wake(productId, epoch, 'seat');
  }

  /** Seats freed by purchases so far: read before the units left, for {@link admit}. */
  async doneCount(productId: string, epoch: number): Promise<number> {
    return Number(
      (await this.redis.hget(this.keys.room(productId, epoch).room, ROOM_FIELD.done)) ?? 0,
    );
  }

  /**
   * Keeps a shopper's Web Push subscription (opaque JSON: services/room/turn-push.ts), one per
   * shopper and sale, in the room's slot, as long as the room's keys.
   */
  async savePush(
    productId: string,
    sale: { epoch: number; endsAt: number },
    userId: string,
    record: string,
  ): Promise<void> {
    const key = this.keys.room(productId, sale.epoch).push;
    await this.redis.multi().hset(key, userId, record).expire(key, keepSeconds(sale.endsAt)).exec();
  }

  /** The push subscriptions of those of `userIds` who have one (one HMGET). */
  async readPush(
    productId: string,
    epoch: number,
    userIds: string[],
  ): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (userIds.length === 0) return found;
    const records = await this.redis.hmget(this.keys.room(productId, epoch).push, ...userIds);
    records.forEach((r, i) => r !== null && found.set(userIds[i]!, r));
    return found;
  }

  /** Forgets a shopper's push subscription (its push service said it is gone). */
  async dropPush(productId: string, epoch: number, userId: string): Promise<void> {
    await this.redis.hdel(this.keys.room(productId, epoch).push, userId);
  }
}
