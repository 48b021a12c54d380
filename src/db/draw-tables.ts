/**
 * The draws' tables (migrations/20261206_0016_draws.ts, docs/draw.md): a draw's settings, its
 * freeze and beacon, the frozen list, the entries screened out and the ranks.
 */
import type { ColumnType, Generated } from 'kysely';

/** What a draw's seed said (docs/draw.md): the entry window, the time to buy, the shop's rules. */
export interface DrawSettingsTable {
  product_id: string;
  epoch: number;
  entries_open_at: Date;
  entries_close_at: Date;
  buy_within_seconds: number;
  /** the screening rules as the shop set them (screening.ts's DrawRules) */
  rules: ColumnType<unknown, string, never>;
  created_at: Generated<Date>;
}

/** A draw's freeze, and once drawn its beacon: immutable but for the beacon, set once. */
export interface DrawsTable {
  product_id: string;
  epoch: number;
  frozen_at: Date;
  closed_at: Date;
  entries: number;
  removed: number;
  root: string;
  /** the roots of the Merkle tree's 256-leaf blocks, 32 bytes each */
  chunk_roots: Buffer;
  rules_hash: string;
  /** the beacon chain's drand info */
  chain: ColumnType<unknown, string, never>;
  round: ColumnType<string, number, never>;
  round_at: Date;
  units: number;
  winners: number;
  beacon_randomness: string | null;
  beacon_signature: string | null;
  drawn_at: Date | null;
}

/** The frozen list: sorted entry ids by position, each with its shopper. */
export interface DrawEntriesTable {
  product_id: string;
  epoch: number;
  position: number;
  entry_id: string;
  user_id: string;
}

/** The entries the screening removed, and by which rule. */
export interface DrawRemovedTable {
  product_id: string;
  epoch: number;
  entry_id: string;
  user_id: string;
  rule: string;
}

/** The draw's order: rank (1 first) -> position in the frozen list. */
export interface DrawRanksTable {
  product_id: string;
  epoch: number;
  rank: number;
  position: number;
}
