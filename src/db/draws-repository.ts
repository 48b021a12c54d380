/**
 * A draw's rows (docs/draw.md): its settings at the seed, the freeze (the frozen list, the
 * entries the rules removed, the Merkle root and the beacon round that will draw it) in one
 * transaction, the draw's order and beacon once, and the reads the transcript, the entries list,
 * a shopper's entry and the admitter's line need. The rows never change once written (triggers).
 */
import { sql } from 'kysely';
import type { Db } from './index.js';

/** Rows an insert carries at most (each a statement well within PG_STATEMENT_TIMEOUT_MS). */
const INSERT_ROWS = 20_000;

export interface DrawSettingsRow {
  entriesOpenAt: Date;
  entriesCloseAt: Date;
  buyWithinSeconds: number;
  rules: unknown;
}

export async function recordDrawSettings(
  db: Db,
  productId: string,
  epoch: number,
  settings: DrawSettingsRow,
): Promise<void> {
  await db
    .insertInto('draw_settings')
    .values({
      product_id: productId,
      epoch,
      entries_open_at: settings.entriesOpenAt,
      entries_close_at: settings.entriesCloseAt,
      buy_within_seconds: settings.buyWithinSeconds,
      rules: JSON.stringify(settings.rules),
    })
    .onConflict((oc) => oc.columns(['product_id', 'epoch']).doNothing())
    .execute();
}

export async function drawSettings(
  db: Db,
  productId: string,
  epoch: number,
): Promise<DrawSettingsRow | null> {
  const row = await db
    .selectFrom('draw_settings')
    .selectAll()
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .executeTakeFirst();
  return row
    ? {
        entriesOpenAt: row.entries_open_at,
        entriesCloseAt: row.entries_close_at,
        buyWithinSeconds: row.buy_within_seconds,
        rules: row.rules,
      }
    : null;
}

/** A draw's freeze row, and its beacon once drawn. */
export interface DrawRecord {
  productId: string;
  epoch: number;
  frozenAt: Date;
  closedAt: Date;
  entries: number;
  removed: number;
  root: string;
  chunkRoots: Buffer;
  rulesHash: string;
  chain: unknown;
  round: number;
  roundAt: Date;
  units: number;
  winners: number;
  beacon: { randomness: string; signature: string } | null;
  drawnAt: Date | null;
}

export async function drawRecord(
  db: Db,
  productId: string,
  epoch: number,
): Promise<DrawRecord | null> {
  const row = await db
    .selectFrom('draws')
    .selectAll()
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .executeTakeFirst();
  if (!row) return null;
  return {
    productId,
    epoch,
    frozenAt: row.frozen_at,
    closedAt: row.closed_at,
    entries: row.entries,
    removed: row.removed,
    root: row.root,
    chunkRoots: row.chunk_roots,
    rulesHash: row.rules_hash,
    chain: row.chain,
    round: Number(row.round),
    roundAt: row.round_at,
    units: row.units,
    winners: row.winners,
    beacon:
      row.beacon_randomness && row.beacon_signature
        ? { randomness: row.beacon_randomness, signature: row.beacon_signature }
        : null,
    drawnAt: row.drawn_at,
  };
}

export interface Freeze {
  productId: string;
  epoch: number;
  frozenAt: Date;
  closedAt: Date;
  /** the eligible entries, sorted by entry id: position i is the i-th leaf */
  entries: ReadonlyArray<{ entryId: string; userId: string }>;
  removed: ReadonlyArray<{ entryId: string; userId: string; rule: string }>;
  root: string;
  chunkRoots: Buffer;
  rulesHash: string;
  chain: unknown;
  round: number;
  roundAt: Date;
  units: number;
  winners: number;
}

/**
 * Writes the freeze in one transaction, committed only while the database's clock is still before
 * the beacon round's time (a freeze that took longer than its margin is rolled back: the caller
 * freezes again for a later round). `existing` when another process froze this draw first.
 */
export async function writeFreeze(db: Db, freeze: Freeze): Promise<'frozen' | 'existing' | 'late'> {
  const f = freeze;
  try {
    return await db.transaction().execute(async (tx) => {
      const taken = await tx
        .insertInto('draws')
        .values({
          product_id: f.productId,
          epoch: f.epoch,
          frozen_at: f.frozenAt,
          closed_at: f.closedAt,
          entries: f.entries.length,
          removed: f.removed.length,
          root: f.root,
          chunk_roots: f.chunkRoots,
          rules_hash: f.rulesHash,
          chain: JSON.stringify(f.chain),
          round: f.round,
          round_at: f.roundAt,
          units: f.units,
          winners: f.winners,
        })
        .onConflict((oc) => oc.columns(['product_id', 'epoch']).doNothing())
        .returning('epoch')
        .executeTakeFirst();
      if (!taken) return 'existing' as const;
      for (let from = 0; from < f.entries.length; from += INSERT_ROWS) {
        const part = f.entries.slice(from, from + INSERT_ROWS);
        await sql`
          insert into draw_entries (product_id, epoch, position, entry_id, user_id)
          select ${f.productId}, ${f.epoch}, ${from} + ord - 1, e, u
          from unnest(${part.map((e) => e.entryId)}::text[], ${part.map((e) => e.userId)}::text[])
            with ordinality as x(e, u, ord)`.execute(tx);
      }
      for (let from = 0; from < f.removed.length; from += INSERT_ROWS) {
        const part = f.removed.slice(from, from + INSERT_ROWS);
        await sql`
          insert into draw_removed (product_id, epoch, entry_id, user_id, rule)
          select ${f.productId}, ${f.epoch}, e, u, r
          from unnest(${part.map((e) => e.entryId)}::text[], ${part.map((e) => e.userId)}::text[],
                      ${part.map((e) => e.rule)}::text[]) as x(e, u, r)`.execute(tx);
      }
      // statistics of the rows just written: the joins that read them by rank plan by index
      await sql`analyze draw_entries`.execute(tx);
      const { rows } = await sql<{ early: boolean }>`
        select clock_timestamp() < ${f.roundAt} as early`.execute(tx);
      if (!rows[0]?.early) throw new LateFreeze();
      return 'frozen' as const;
    });
  } catch (err) {
    if (err instanceof LateFreeze) return 'late';
    throw err;
  }
}

class LateFreeze extends Error {}

/**
 * Writes the draw's order (rank r -> position, r from 1) and its beacon, once: `existing` when
 * another process drew it first (the same beacon gives the same order: the caller checks).
 */
export async function writeDraw(
  db: Db,
  productId: string,
  epoch: number,
  beacon: { randomness: string; signature: string },
  positionsByRank: Int32Array,
): Promise<'drawn' | 'existing'> {
  return db.transaction().execute(async (tx) => {
    const updated = await tx
      .updateTable('draws')
      .set({
        beacon_randomness: beacon.randomness,
        beacon_signature: beacon.signature,
        drawn_at: sql<Date>`now()`,
      })
      .where('product_id', '=', productId)
      .where('epoch', '=', epoch)
      .where('drawn_at', 'is', null)
      .returning('epoch')
      .executeTakeFirst();
    if (!updated) return 'existing' as const;
    for (let from = 0; from < positionsByRank.length; from += INSERT_ROWS) {
      const part = Array.from(positionsByRank.subarray(from, from + INSERT_ROWS));
      await sql`
        insert into draw_ranks (product_id, epoch, rank, position)
        select ${productId}, ${epoch}, ${from} + ord, p
        from unnest(${part}::int[]) with ordinality as x(p, ord)`.execute(tx);
    }
    await sql`analyze draw_ranks`.execute(tx);
    return 'drawn' as const;
  });
}

/** The frozen list's entry ids from `position` on, in order (the entries list, a proof's block). */
export async function entryIdsFrom(
  db: Db,
  productId: string,
  epoch: number,
  position: number,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('draw_entries')
    .select('entry_id')
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .where('position', '>=', position)
    .orderBy('position')
    .limit(limit)
    .execute();
  return rows.map((r) => r.entry_id);
}

/** Ranks `from`..`from + limit - 1` (1 first: the winners, then the waitlist) with their entry and shopper. */
export async function rankedEntries(
  db: Db,
  productId: string,
  epoch: number,
  from: number,
  limit: number,
): Promise<Array<{ rank: number; entryId: string; userId: string }>> {
  const { rows } = await sql<{ rank: number; entry_id: string; user_id: string }>`
    select r.rank, e.entry_id, e.user_id from draw_ranks r
    join draw_entries e on e.product_id = r.product_id and e.epoch = r.epoch
      and e.position = r.position
    where r.product_id = ${productId} and r.epoch = ${epoch} and r.rank >= ${from}
    order by r.rank limit ${limit}`.execute(db);
  return rows.map((r) => ({ rank: Number(r.rank), entryId: r.entry_id, userId: r.user_id }));
}

/** Entry ids in rank order from rank `from`. */
export const entryIdsByRank = async (...args: Parameters<typeof rankedEntries>) =>
  (await rankedEntries(...args)).map((e) => e.entryId);

/** Shoppers by rank from `from` (the admitter's line, fed a part at a time). */
export const shoppersByRank = async (...args: Parameters<typeof rankedEntries>) =>
  (await rankedEntries(...args)).map((e) => e.userId);

/** A shopper's entry in the frozen list (its rank once drawn), or the rule that removed it. */
export type FrozenEntry =
  | { kind: 'listed'; entryId: string; position: number; rank: number | null }
  | { kind: 'removed'; entryId: string; rule: string };

export async function frozenEntryOf(
  db: Db,
  productId: string,
  epoch: number,
  userId: string,
): Promise<FrozenEntry | null> {
  const { rows } = await sql<{ entry_id: string; position: number; rank: number | null }>`
    select e.entry_id, e.position, r.rank from draw_entries e
    left join draw_ranks r on r.product_id = e.product_id and r.epoch = e.epoch
      and r.position = e.position
    where e.product_id = ${productId} and e.epoch = ${epoch} and e.user_id = ${userId}`.execute(db);
  const row = rows[0];
  if (row) return { kind: 'listed', entryId: row.entry_id, position: row.position, rank: row.rank };
  const removed = await db
    .selectFrom('draw_removed')
    .select(['entry_id', 'rule'])
    .where('product_id', '=', productId)
    .where('epoch', '=', epoch)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return removed ? { kind: 'removed', entryId: removed.entry_id, rule: removed.rule } : null;
}

/**
 * The entries whose shopper holds an order of the draw's sale that stands (not cancelled,
 * expired, refunded or lost in a dispute), in rank order.
 */
export async function boughtEntryIds(db: Db, productId: string, epoch: number): Promise<string[]> {
  const { rows } = await sql<{ entry_id: string }>`
    select e.entry_id from draw_entries e
    join draw_ranks r on r.product_id = e.product_id and r.epoch = e.epoch
      and r.position = e.position
    where e.product_id = ${productId} and e.epoch = ${epoch}
      and exists (select 1 from orders o where o.product_id = e.product_id and o.epoch = e.epoch
        and o.user_id = e.user_id
        and o.status in ('final', 'awaiting_payment', 'paid', 'disputed'))
    order by r.rank`.execute(db);
  return rows.map((r) => r.entry_id);
}
