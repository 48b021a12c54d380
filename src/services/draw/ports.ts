/**
 * What the draw's use cases need of storage, as ports: the entries in Redis (inventory's
 * DrawStore implements it) and the frozen draw in PostgreSQL (the composition root adapts the
 * draws repository). Domain methods only: no client, keys or Db.
 */
import type { DrawWindow } from '../../inventory/index.js';

export type EnterAnswer =
  | { code: 'entered' | 'held'; entryId: string; count: number }
  | { code: 'early'; msToOpen: number }
  | { code: 'closed' }
  | { code: 'full'; count: number }
  /** the draw's Redis is near its maxmemory: no new entry is written */
  | { code: 'short' };

export interface DrawEntryStore {
  enter(
    productId: string,
    sale: { epoch: number; endsAt: number; draw: DrawWindow },
    entrant: { userId: string; block: string },
    maxEntries: number,
  ): Promise<EnterAnswer>;
  withdraw(
    productId: string,
    epoch: number,
    userId: string,
    closeAt: number,
  ): Promise<{ code: 'withdrawn' | 'none' | 'closed'; entryId: string }>;
  entryOf(productId: string, epoch: number, userId: string): Promise<{ entryId: string } | null>;
  counters(productId: string, epoch: number): Promise<{ count: number; closedAt: number }>;
  /** the draw's line in its room: its last ticket written, the served counter */
  line(
    productId: string,
    epoch: number,
  ): Promise<{ last: number; served: number; opened: boolean }>;
  /** when the shopper was given their purchase right (ms; 0: not given) */
  admittedAt(productId: string, epoch: number, userId: string): Promise<number>;
}

/** A draw's freeze, and its beacon once drawn (the draws table). */
export interface DrawRecordView {
  frozenAt: Date;
  closedAt: Date;
  entries: number;
  removed: number;
  root: string;
  chunkRoots: Buffer;
  rulesHash: string;
  /** the beacon chain's drand info */
  chain: unknown;
  round: number;
  roundAt: Date;
  units: number;
  winners: number;
  beacon: { randomness: string; signature: string } | null;
  drawnAt: Date | null;
}

export type FrozenEntryView =
  | { kind: 'listed'; entryId: string; position: number; rank: number | null }
  | { kind: 'removed'; entryId: string; rule: string };

export interface DrawRecordSource {
  record(productId: string, epoch: number): Promise<DrawRecordView | null>;
  frozenEntryOf(productId: string, epoch: number, userId: string): Promise<FrozenEntryView | null>;
  /** the frozen list's ids from `position` on */
  entryIdsFrom(
    productId: string,
    epoch: number,
    position: number,
    limit: number,
  ): Promise<string[]>;
  /** ids in rank order from rank `from` (1 first) */
  entryIdsByRank(productId: string, epoch: number, from: number, limit: number): Promise<string[]>;
  /** ids whose shopper holds an order of the draw's sale that stands, in rank order */
  boughtEntryIds(productId: string, epoch: number): Promise<string[]>;
}
