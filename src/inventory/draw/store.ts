/**
 * A draw's Redis side: an entry (one per shopper, a second answers the first), its withdrawal, a
 * shopper's entry read, the close by the admitter, the scan of every entry for the freeze, and the
 * line written into the product's waiting room once drawn (its scripts through protocol.ts). Every
 * key shares the product's hash tag (one Cluster slot with its meta and room): each operation is
 * one script.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../redis/connection.js';
import type { Keys } from '../../redis/keys.js';
import type { MemoryHeadroom } from '../../redis/memory-headroom.js';
import { storeFull } from '../../outages.js';
import {
  decodeDrawCounters,
  decodeDrawEntry,
  DRAW_COUNTER_FIELDS,
  type DrawCounters,
  type DrawEntryRecord,
} from '../records/draw-entry.js';
import type { DrawWindow } from '../records/product-meta.js';
import { decodeRoomCounters, ROOM_COUNTER_FIELDS } from '../records/room-state.js';
import { ROOM_FIELD } from '../records/hash-fields.js';
import {
  closeDraw,
  enterDraw,
  withdrawEntry,
  writeLine,
  type CloseReply,
  type EnterReply,
} from './protocol.js';

/** The draw's keys outlive the sale's end by this long. */
const DRAW_KEEP_S = 86_400;
/** Entries one HSCAN call asks for. */
const SCAN_COUNT = 10_000;

const keepSeconds = (endsAt: number) =>
  Math.max(DRAW_KEEP_S, Math.ceil((endsAt - Date.now()) / 1_000) + DRAW_KEEP_S);

/** An entry as the freeze reads it. */
export interface ScannedEntry extends DrawEntryRecord {
  userId: string;
}

export class DrawStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    /** near maxmemory no new entry is written (docs/catalogue.md#redis-memory) */
    private readonly headroom?: MemoryHeadroom | undefined,
  ) {}

  /**
   * Enters the shopper (or finds their entry): `short` when the draw's Redis node is near its
   * maxmemory and this shopper holds no entry (nothing written).
   */
  async enter(
    productId: string,
    sale: { epoch: number; endsAt: number; draw: DrawWindow },
    entrant: { userId: string; block: string },
    maxEntries: number,
  ): Promise<EnterReply | { code: 'short' }> {
    const k = this.keys.draw(productId, sale.epoch);
    if (await this.headroom?.short(k.draw))
      return this.heldOnly(productId, sale.epoch, entrant.userId);
    try {
      return await enterDraw(this.redis, k, {
        userId: entrant.userId,
        entryId: randomBytes(16).toString('hex'),
        block: entrant.block,
        openAt: sale.draw.entriesOpenAt,
        closeAt: sale.draw.entriesCloseAt,
        keepSeconds: keepSeconds(sale.endsAt),
        maxEntries,
      });
    } catch (err) {
      if (!storeFull(err)) throw err;
      this.headroom?.refused(k.draw);
      return this.heldOnly(productId, sale.epoch, entrant.userId);
    }
  }

  private async heldOnly(
    productId: string,
    epoch: number,
    userId: string,
  ): Promise<EnterReply | { code: 'short' }> {
    const held = await this.entryOf(productId, epoch, userId);
    if (!held) return { code: 'short' };
    const { count } = await this.counters(productId, epoch);
    return { code: 'held', entryId: held.entryId, count };
  }

  withdraw(productId: string, epoch: number, userId: string, closeAt: number) {
    return withdrawEntry(this.redis, this.keys.draw(productId, epoch), userId, closeAt);
  }

  /** The shopper's entry as the store holds it (until the keys expire); null: none. */
  async entryOf(productId: string, epoch: number, userId: string): Promise<DrawEntryRecord | null> {
    const record = await this.redis.hget(this.keys.draw(productId, epoch).entries, userId);
    return record === null ? null : decodeDrawEntry(record);
  }

  async counters(productId: string, epoch: number): Promise<DrawCounters> {
    const values = await this.redis.hmget(
      this.keys.draw(productId, epoch).draw,
      ...DRAW_COUNTER_FIELDS,
    );
    return decodeDrawCounters(values);
  }

  /** The admitter closes the draw at the end of its window (fenced by its lease). */
  close(productId: string, epoch: number, fence: number, closeAt: number): Promise<CloseReply> {
    return closeDraw(this.redis, this.keys.draw(productId, epoch), fence, closeAt);
  }

  /** Every entry held (read after the close: nothing changes it any more). */
  async scan(productId: string, epoch: number): Promise<ScannedEntry[]> {
    const key = this.keys.draw(productId, epoch).entries;
    const entries: ScannedEntry[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, 'COUNT', SCAN_COUNT);
      cursor = next;
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const record = decodeDrawEntry(flat[i + 1]!);
        if (record) entries.push({ userId: flat[i]!, ...record });
      }
    } while (cursor !== '0');
    return entries;
  }

  /** The room's line as written so far: its last ticket, the served counter, opened. */
  async line(
    productId: string,
    epoch: number,
  ): Promise<{ last: number; served: number; opened: boolean }> {
    const room = this.keys.room(productId, epoch).room;
    const values = await this.redis.hmget(room, ROOM_FIELD.next, ...ROOM_COUNTER_FIELDS);
    const counters = decodeRoomCounters(values.slice(1));
    return { last: Number(values[0] ?? 0), served: counters.served, opened: counters.opened };
  }

  /** When the shopper was given their purchase right in the draw's room (ms; 0: not given). */
  async admittedAt(productId: string, epoch: number, userId: string): Promise<number> {
    return Number((await this.redis.hget(this.keys.room(productId, epoch).admitted, userId)) ?? 0);
  }

  /** Writes the next part of the line (ranks `firstTicket`.. in order) into the room. */
  feed(
    productId: string,
    sale: { epoch: number; endsAt: number },
    fence: number,
    firstTicket: number,
    shoppers: readonly string[],
  ) {
    return writeLine(
      this.redis,
      this.keys.room(productId, sale.epoch),
      this.keys.draw(productId, sale.epoch),
      { fence, firstTicket, keepSeconds: keepSeconds(sale.endsAt), shoppers },
    );
  }
}
