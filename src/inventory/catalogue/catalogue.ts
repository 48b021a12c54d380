/**
 * What this process knows of each product: its config and epoch (from the product meta hash),
 * which segments are empty, and whether it is sold out. Processes tell each other through the
 * product's events channel (sharded pub/sub; messages in records/product-events.ts). Once a
 * product is known sold out, a purchase is refused without any Redis command.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Strategy } from '../../db/schema.js';
import type { Logger } from '../../log.js';
import type { Keys } from '../../redis/keys.js';
import type { PubSub } from '../../redis/pubsub.js';
import { storeOutage } from '../../outages.js';
import { clearSoldOut, markSoldOut } from './protocol.js';
import { decodeEvent, encodeEvent } from '../records/product-events.js';
import { decodeMeta, isSoldOut, type RoomSettings } from '../records/product-meta.js';
import type { DrawWindow, ProductChallenge } from '../records/product-meta.js';
import { RoomHeard } from './room-heard.js';
import { roomNoticeOf, RoomNotices } from './room-notices.js';

export interface ProductView {
  readonly id: string;
  readonly epoch: number;
  readonly total: number;
  readonly segments: number;
  readonly strategy: Strategy;
  /** ms since the epoch; 0 = from the seed on */
  readonly startsAt: number;
  /** ms; 0 = open-ended */
  readonly endsAt: number;
  readonly limitPerUser: number;
  /** seconds a buyer has to pay; 0: every sale is final */
  readonly payWithinSeconds: number;
  /** purchases need a sale token */
  readonly requireSaleToken: boolean;
  /** catalogue number, carried by its order ids (0 until given: v4 ids) */
  readonly number: number;
  /**
   * the product's waiting room: its settings, and what this process heard of its admissions
   * (admit notices, room-heard.ts); null: the product has none
   */
  readonly room: { readonly settings: RoomSettings; readonly heard: RoomHeard } | null;
  /** the product is sold by a draw (docs/draw.md): its entry window; its room is the cascade */
  readonly draw: DrawWindow | null;
  readonly challenge: ProductChallenge | null | 'default';
  /** an operator paused the sale: purchases are refused, the room admits nobody */
  readonly paused: boolean;
  /**
   * Segments seen empty in this epoch. Stock only falls within an epoch, but for units that come
   * back (a cancelled or expired order of a sale with a payment window: a restock notice).
   */
  readonly empty: Set<number>;
  soldOut: boolean;
  /**
   * Recorded sold out in this epoch (markSoldOut) and no unit heard back since: what a waiting room
   * tells its line. Unlike `soldOut`, kept across a reload of a sale with a payment window.
   */
  soldOutMarked: boolean;
  /** when this process learnt it is sold out (ms), 0 while it is not */
  soldOutAt: number;
  /**
   * Counts what this view learnt of units running out (a segment empty, the sale sold out): a
   * read of the segments started before the last of them may be older than it (noteStocked).
   */
  runOuts: number;
}

interface Entry {
  view: ProductView | null;
  unsubscribe: () => void;
  /** notices may have been missed (subscriber reconnected): reload before trusting the view */
  stale: boolean;
  /** a stale view's reload failed (store outage): kept, and not asked again before this time */
  retryAt: number;
}

/** After a failed reload, how long a stale view is used before Redis is asked again. */
const STALE_RETRY_MS = 1_000;

/**
 * A sale with a payment window is sold out only until a unit comes back: a process that missed
 * the restock notice must not refuse from memory for long. Its sold-out view is trusted this long.
 */
const SOLD_OUT_RECHECK_MS = 1_000;

/** The view says sold out, but units may have come back since (see SOLD_OUT_RECHECK_MS). */
const recheckDue = (view: ProductView) =>
  view.soldOut && view.payWithinSeconds > 0 && Date.now() - view.soldOutAt > SOLD_OUT_RECHECK_MS;

/** Products whose views are kept; past it the oldest are dropped (and reloaded on demand). */
const MAX_PRODUCTS = 10_000;

export class Catalogue {
  /** what the rooms' admitters hear of their rooms (room-notices.ts) */
  readonly roomNotices = new RoomNotices();
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<ProductView | null>>();

  constructor(
    private readonly opts: {
      redis: RedisClient;
      pubsub: PubSub;
      keys: Keys;
      logger?: Logger | undefined;
    },
  ) {
    // Notices published while the subscriber was away are lost: read each product again.
    opts.pubsub.onReconnect(() => this.markStale());
  }

  /** The product's view when this process holds it and trusts it (no Redis command). */
  known(productId: string): ProductView | undefined {
    const e = this.entries.get(productId);
    return e?.view && !e.stale && !recheckDue(e.view) ? e.view : undefined;
  }

  /**
   * The product's view, from memory when known; null when it was never seeded. A view gone stale
   * is reloaded; while its meta's shard does not answer, the stale view serves: it is safe, since
   * every segment script checks the epoch (a reseed meanwhile is caught there).
   */
  get(productId: string): ProductView | null | Promise<ProductView | null> {
    const e = this.entries.get(productId);
    if (e?.view && recheckDue(e.view)) e.stale = true;
    if (e?.view && (!e.stale || Date.now() < e.retryAt)) return e.view;
    let p = this.loading.get(productId);
    if (!p) {
      p = this.load(productId)
        .catch((err: unknown) => {
          const kept = this.entries.get(productId);
          if (!kept?.view || !storeOutage(err)) throw err;
          kept.retryAt = Date.now() + STALE_RETRY_MS;
          return kept.view;
        })
        .finally(() => this.loading.delete(productId));
      this.loading.set(productId, p);
    }
    return p;
  }

  private async load(productId: string): Promise<ProductView | null> {
    const k = this.opts.keys.product(productId);
    let entry = this.entries.get(productId);
    // Unknown ids (typos, or a flood of made-up ones) must not cost a subscription each.
    if (!entry && (await this.opts.redis.exists(k.meta)) === 0) return null;
    if (!entry) {
      // Subscribe before reading, so no notice between the read and the subscription is missed.
      const e: Entry = { view: null, unsubscribe: () => {}, stale: false, retryAt: 0 };
      e.unsubscribe = await this.opts.pubsub.subscribe(k.events, (m) => this.onEvent(productId, m));
      if (this.entries.size >= MAX_PRODUCTS) this.evictOldest();
      this.entries.set(productId, e);
      entry = e;
    }
    const meta = decodeMeta(await this.opts.redis.hgetall(k.meta));
    if (!meta) {
      entry.unsubscribe();
      this.entries.delete(productId);
      return null;
    }
    const view: ProductView = {
      id: productId,
      epoch: meta.epoch,
      total: meta.total,
      segments: meta.segments,
      strategy: meta.strategy,
      startsAt: meta.startsAt,
      endsAt: meta.endsAt,
      limitPerUser: meta.limitPerUser,
      payWithinSeconds: meta.payWithinSeconds,
      requireSaleToken: meta.requireSaleToken,
      number: meta.number,
      room: meta.waitingRoom && { settings: meta.waitingRoom, heard: new RoomHeard() },
      draw: meta.draw,
      challenge: meta.challenge,
      paused: meta.paused,
      empty: new Set(),
      soldOut: isSoldOut(meta),
      soldOutMarked: meta.soldOutEpoch === meta.epoch,
      soldOutAt: isSoldOut(meta) ? Date.now() : 0,
      runOuts: 0,
    };
    entry.view = view;
    entry.stale = false;
    return view;
  }

  private evictOldest(): void {
    const [id, e] = this.entries.entries().next().value as [string, Entry];
    e.unsubscribe();
    this.entries.delete(id);
  }

  private onEvent(productId: string, message: string): void {
    const event = decodeEvent(message);
    const view = this.entries.get(productId)?.view;
    if (!view || !event) return;
    if (event.epoch > view.epoch || event.kind === 'reseed') {
      this.forget(productId);
      if (view.room) this.roomNotices.tell(productId, { kind: 'reseed' });
      return;
    }
    if (event.epoch < view.epoch) return;
    if (event.kind === 'changed') this.reload(productId, view);
    else if (event.kind === 'empty') this.addEmpty(view, event.segment, false);
    else if (event.kind === 'restock') this.restocked(view, event.segment);
    else if (event.kind === 'soldout') this.markSoldOutView(view);
    const notice = view.room && roomNoticeOf(view.room.heard, event);
    if (notice) this.roomNotices.tell(productId, notice);
  }

  /**
   * An operator changed the sale: its meta is read again, keeping what this process heard of the
   * epoch (empty segments, the room's admissions), so polls stay answered from memory.
   */
  private reload(productId: string, was: ProductView): void {
    const e = this.entries.get(productId);
    if (!e) return;
    e.stale = true;
    e.retryAt = 0;
    void Promise.resolve(this.get(productId))
      .then((view) => {
        if (!view || view.epoch !== was.epoch || view === was) return;
        // the new settings (a pace changed live), with what this process heard of the admissions
        if (view.room && was.room) {
          (view as { room: ProductView['room'] }).room = {
            settings: view.room.settings,
            heard: was.room.heard,
          };
        }
        for (const seg of was.empty) view.empty.add(seg);
      })
      .catch((err: unknown) =>
        this.opts.logger?.warn({ err, product: productId }, 'reloading a changed product failed'),
      );
  }

  /** Tells every process (this one included) that an operator changed the product's sale. */
  async announceChange(productId: string, epoch: number): Promise<void> {
    await this.opts.redis.spublish(
      this.opts.keys.product(productId).events,
      encodeEvent({ kind: 'changed', epoch }),
    );
  }

  /** Drops what is known of a product (the next request reloads it). */
  forget(productId: string): void {
    const e = this.entries.get(productId);
    if (e) e.view = null;
  }

  clear(): void {
    for (const id of this.entries.keys()) this.forget(id);
  }

  private markStale(): void {
    for (const e of this.entries.values()) {
      e.stale = true;
      e.retryAt = 0;
    }
    this.roomNotices.tell('', { kind: 'resync' });
  }

  /**
   * Records that `segment` ran out in the view's epoch and tells the other processes; when that
   * makes every segment empty, marks the product sold out (in Redis too).
   */
  noteEmpty(view: ProductView, segment: number): void {
    this.addEmpty(view, segment, true);
  }

  private addEmpty(view: ProductView, segment: number, announce: boolean): void {
    if (view.empty.has(segment) || !(segment >= 0 && segment < view.segments)) return;
    view.empty.add(segment);
    view.runOuts++;
    const k = this.opts.keys.product(view.id);
    const fail = (err: unknown) =>
      this.opts.logger?.warn({ err, product: view.id }, 'notice failed');
    if (announce) {
      this.opts.redis
        .spublish(k.events, encodeEvent({ kind: 'empty', epoch: view.epoch, segment }))
        .catch(fail);
    }
    if (view.empty.size < view.segments || view.soldOut) return;
    this.markSoldOutView(view);
    // Whoever completes the set records it (idempotent), so a process loading later starts sold out.
    markSoldOut(this.opts.redis, k, view.epoch)
      .then((recorded) =>
        recorded
          ? this.opts.redis.spublish(k.events, encodeEvent({ kind: 'soldout', epoch: view.epoch }))
          : undefined,
      )
      .catch(fail);
  }

  /**
   * `segment` was read holding units (the room admitter's read each tick): when this view has it
   * empty or the product sold out, the units came back without this process hearing of it (a
   * restock notice lost, or a sold-out mark written from a read older than the return), so it
   * announces the return itself. A view and a mark that disagree with the segments are healed
   * within one read, not left until the next return (a line otherwise stays stopped).
   * @param runOuts - the view's {@link ProductView.runOuts} when the read was sent: a read older
   *   than what the view learnt since (a purchase emptied the segment meanwhile) changes nothing
   */
  noteStocked(view: ProductView, segment: number, runOuts: number): void {
    if (view.runOuts !== runOuts) return;
    if (!view.empty.has(segment) && !view.soldOut && !view.soldOutMarked) return;
    this.restocked(view, segment);
    this.announceRestock(view.id, view.epoch, segment).catch((err: unknown) =>
      this.opts.logger?.warn({ err, product: view.id }, 'notice failed'),
    );
  }

  private restocked(view: ProductView, segment: number): void {
    view.empty.delete(segment);
    view.soldOut = false;
    view.soldOutMarked = false;
    view.soldOutAt = 0;
  }

  private markSoldOutView(view: ProductView): void {
    view.runOuts++;
    view.soldOut = true;
    view.soldOutMarked = true;
    view.soldOutAt = Date.now();
  }

  /**
   * Units came back to `segment` (a returned order): the sale is not sold out any more, in Redis
   * and in every process's view.
   */
  async announceRestock(productId: string, epoch: number, segment: number): Promise<void> {
    const k = this.opts.keys.product(productId);
    await clearSoldOut(this.opts.redis, k, epoch);
    await this.opts.redis.spublish(k.events, encodeEvent({ kind: 'restock', epoch, segment }));
  }

  /** Tells every process a product was reseeded (the seeding process included). */
  async announceReseed(productId: string, epoch: number): Promise<void> {
    this.forget(productId);
    await this.opts.redis.spublish(
      this.opts.keys.product(productId).events,
      encodeEvent({ kind: 'reseed', epoch }),
    );
  }

  close(): void {
    for (const e of this.entries.values()) e.unsubscribe();
    this.entries.clear();
  }
}
