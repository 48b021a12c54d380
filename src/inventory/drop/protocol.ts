/**
 * The drop's Redis door and the gateway of its scripts: an operator's change of a segment's units
 * (lua/dropUnits-1.lua) and of the product's meta (lua/dropMeta-1.lua: paused, the end, the
 * room's pace), with their key order, arguments and reply tables; and a segment's sale window
 * (the catalogue gateway's setWindow: pause, resume, end now). Every write here is a script flagged
 * allow-oom, so the controls run on a Redis past its maxmemory. Callers never see a key or a KEYS
 * array.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import type { ReplicaWait } from '../../redis/replica-wait.js';
import { luaScript } from '../../redis/scripts.js';
import { timeReplyMs } from '../../redis/time.js';
import { setWindow, type WindowReply } from '../catalogue/protocol.js';
import { readProductState, type ProductState } from '../catalogue/product-state.js';
import {
  decodeMeta,
  encodeRoomSettings,
  type ProductMeta,
  type RoomSettings,
} from '../records/product-meta.js';

const scripts = {
  dropUnits: luaScript('dropUnits', { done: 0, staleEpoch: 1, staleFence: 2 }),
  dropMeta: luaScript('dropMeta', { set: 0, staleEpoch: 1 }),
};

/** What a control writes in the meta (undefined keeps each). */
export interface MetaChange {
  paused?: boolean;
  endsAt?: number;
  waitingRoom?: RoomSettings;
}

export type MetaReply = { code: 'set' } | { code: 'stale-epoch'; epoch: number };

export type UnitsReply =
  | { code: 'done'; units: number; stock: number }
  | { code: 'stale-epoch'; epoch: number }
  | { code: 'stale-fence'; fence: number };

export class DropStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** durable mode: a control is answered once the replicas hold what it wrote */
    private readonly replicaWait?: ReplicaWait | undefined,
  ) {}

  /**
   * Durable mode: resolves once the replicas of every master holding the product's meta or one
   * of its segments have every write this process sent them (a control's among them), so a
   * failover cannot take an acknowledged pause back. Nothing to wait for otherwise.
   * @throws ReplicaLagError when they do not confirm in time
   */
  async confirmed(productId: string, segments: number): Promise<void> {
    const wait = this.replicaWait;
    if (!wait) return;
    const keys = [this.metaKey(productId)];
    for (let seg = 0; seg < segments; seg++) keys.push(this.keys.segment(productId, seg).state);
    await Promise.all(keys.map((key) => wait.confirm(key)));
  }

  /** The product's meta; null when never seeded. */
  async meta(productId: string): Promise<ProductMeta | null> {
    return decodeMeta(await this.redis.hgetall(this.metaKey(productId)));
  }

  /** The product's segments as they stand (a withdrawal's plan). */
  stock(productId: string): Promise<ProductState | null> {
    return readProductState({ redis: this.redis, keys: this.keys }, productId);
  }

  /** Redis's clock (ms). */
  async now(): Promise<number> {
    return timeReplyMs(await this.redis.time());
  }

  /** Writes a control's change of the meta, in `epoch` only. */
  async setMeta(productId: string, epoch: number, change: MetaChange): Promise<MetaReply> {
    const paused = change.paused === undefined ? '' : change.paused ? '1' : '0';
    const room = change.waitingRoom ? encodeRoomSettings(change.waitingRoom) : '';
    const r = await scripts.dropMeta.run<number[]>(
      this.redis,
      [this.metaKey(productId)],
      [epoch, paused, change.endsAt ?? '', room],
    );
    return r[0] === 0 ? { code: 'set' } : { code: 'stale-epoch', epoch: r[1]! };
  }

  /** The lock a segment's deducts take (a change of its units takes it too). */
  segmentLock(productId: string, segment: number): string {
    return this.keys.segmentLockName(productId, segment);
  }

  /** Sets the segment's startsAt and / or endsAt (undefined keeps each), in `epoch` only. */
  setWindow(
    productId: string,
    segment: number,
    epoch: number,
    window: { startsAt?: number | undefined; endsAt?: number | undefined },
  ): Promise<WindowReply> {
    return setWindow(this.redis, this.keys.segment(productId, segment), epoch, window);
  }

  /**
   * Puts `units` on sale in the segment (> 0), or takes up to `-units` unsold ones off it (< 0),
   * under the segment lock's `fence` (0: none).
   */
  async changeUnits(
    productId: string,
    segment: number,
    epoch: number,
    units: number,
    fence: number,
  ): Promise<UnitsReply> {
    const r = await scripts.dropUnits.run<number[]>(
      this.redis,
      [this.keys.segment(productId, segment).state],
      [epoch, units, fence],
    );
    if (r[0] === 0) return { code: 'done', units: r[1]!, stock: r[2]! };
    return r[0] === 1
      ? { code: 'stale-epoch', epoch: r[1]! }
      : { code: 'stale-fence', fence: r[1]! };
  }

  private metaKey(productId: string): string {
    return this.keys.product(productId).meta;
  }
}
