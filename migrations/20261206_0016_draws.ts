import { sql, type Kysely } from 'kysely';

// Migrations never import app code and are never edited once landed: add a new file instead.

/**
 * A product's draw (docs/draw.md):
 *
 * - `draw_settings`: what the seed said (the entry window, how long a winner has to buy, the
 *   screening rules the shop set: a bound of entries per address block, a deny list).
 * - `draws`: the freeze, one row per sale epoch: the eligible entries' count, the Merkle root of
 *   the sorted entry ids and the roots of its 256-leaf blocks (a proof reads one block again), the
 *   rules' SHA-256 and the entries they removed, the beacon chain (its drand info) and the round R
 *   that draws it; then, once only, the beacon (randomness, signature) and when it was drawn.
 * - `draw_entries`: the frozen list, the sorted entry ids by position, each with its shopper;
 *   `draw_removed`: the entries the rules removed, and which rule; `draw_ranks`: the draw's
 *   order, rank -> position in the list.
 *
 * Nothing about a draw changes after its freeze: the rows refuse UPDATE and DELETE (a trigger),
 * but for the beacon's columns of `draws`, written once from null.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table draw_settings (
      product_id text not null,
      epoch integer not null,
      entries_open_at timestamptz not null,
      entries_close_at timestamptz not null,
      buy_within_seconds integer not null,
      rules jsonb not null,
      created_at timestamptz not null default now(),
      primary key (product_id, epoch)
    )`.execute(db);
  await sql`
    create table draws (
      product_id text not null,
      epoch integer not null,
      frozen_at timestamptz not null,
      closed_at timestamptz not null,
      entries integer not null,
      removed integer not null,
      root text not null,
      chunk_roots bytea not null,
      rules_hash text not null,
      chain jsonb not null,
      round bigint not null,
      round_at timestamptz not null,
      units integer not null,
      winners integer not null,
      beacon_randomness text,
      beacon_signature text,
      drawn_at timestamptz,
      primary key (product_id, epoch),
      check (frozen_at < round_at)
    )`.execute(db);
  await sql`
    create table draw_entries (
      product_id text not null,
      epoch integer not null,
      position integer not null,
      entry_id text not null,
      user_id text not null,
      primary key (product_id, epoch, position)
    )`.execute(db);
  await sql`create unique index draw_entries_id on draw_entries (product_id, epoch, entry_id)`.execute(
    db,
  );
  await sql`create index draw_entries_user on draw_entries (product_id, epoch, user_id)`.execute(
    db,
  );
  await sql`
    create table draw_removed (
      product_id text not null,
      epoch integer not null,
      entry_id text not null,
      user_id text not null,
      rule text not null,
      primary key (product_id, epoch, entry_id)
    )`.execute(db);
  await sql`create index draw_removed_user on draw_removed (product_id, epoch, user_id)`.execute(
    db,
  );
  await sql`
    create table draw_ranks (
      product_id text not null,
      epoch integer not null,
      rank integer not null,
      position integer not null,
      primary key (product_id, epoch, rank)
    )`.execute(db);
  await sql`create unique index draw_ranks_position on draw_ranks (product_id, epoch, position)`.execute(
    db,
  );

  await sql`
    create function draw_rows_immutable() returns trigger language plpgsql as $$
    begin
      raise exception 'a frozen draw''s % never changes (% refused)', tg_table_name, tg_op
        using errcode = 'P0001';
    end $$`.execute(db);
  for (const table of ['draw_settings', 'draw_entries', 'draw_removed', 'draw_ranks']) {
    await sql`
      create trigger ${sql.raw(`${table}_immutable`)} before update or delete on ${sql.table(table)}
      for each row execute function draw_rows_immutable()`.execute(db);
  }
  await sql`
    create function draws_frozen() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' then
        raise exception 'a frozen draw is never deleted' using errcode = 'P0001';
      end if;
      if (new.product_id, new.epoch, new.frozen_at, new.closed_at, new.entries, new.removed,
          new.root, new.chunk_roots, new.rules_hash, new.chain, new.round, new.round_at, new.units,
          new.winners)
         is distinct from
         (old.product_id, old.epoch, old.frozen_at, old.closed_at, old.entries, old.removed,
          old.root, old.chunk_roots, old.rules_hash, old.chain, old.round, old.round_at, old.units,
          old.winners) then
        raise exception 'a frozen draw never changes' using errcode = 'P0001';
      end if;
      if old.drawn_at is not null and (new.beacon_randomness, new.beacon_signature, new.drawn_at)
         is distinct from (old.beacon_randomness, old.beacon_signature, old.drawn_at) then
        raise exception 'a drawn draw keeps its beacon' using errcode = 'P0001';
      end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger draws_frozen before update or delete on draws
    for each row execute function draws_frozen()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['draw_ranks', 'draw_removed', 'draw_entries', 'draws', 'draw_settings']) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
  }
  await sql`drop function if exists draws_frozen()`.execute(db);
  await sql`drop function if exists draw_rows_immutable()`.execute(db);
}
