/**
 * Product events' SQL: a batch written in one statement (product-events.ts checks it first). An
 * id already written, or repeated in the batch, is skipped; the others take their subject's next
 * sequence numbers, in the batch's order, from `product_event_subjects`, whose row stays locked
 * until the transaction ends (subjects taken in sorted order: two batches never wait on each
 * other in a circle).
 */
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';

export interface ProductEventRow {
  id: string;
  productId: string;
  type: string;
  subject: string;
  /** JSON text */
  data: string;
}

/** @returns how many were new */
export async function insertProductEvents(
  db: Db,
  source: string,
  events: readonly ProductEventRow[],
): Promise<number> {
  const r = await sql<{ n: string }>`
    with batch as (
      select * from unnest(${events.map((e) => e.id)}::text[],
        ${events.map((e) => e.productId)}::text[], ${events.map((e) => e.subject)}::text[],
        ${events.map((e) => e.type)}::text[], ${events.map((e) => e.data)}::text[])
        with ordinality as b(id, product_id, subject, type, data, n)),
    fresh as (
      select distinct on (b.id) b.* from batch b
      where not exists (select 1 from product_events e where e.id = b.id)
      order by b.id, b.n),
    counts as (select subject, count(*)::int as c from fresh group by subject),
    taken as (
      insert into product_event_subjects as s (subject, sequence)
      select subject, c from counts order by subject
      on conflict (subject) do update set sequence = s.sequence + excluded.sequence
      returning s.subject, s.sequence),
    numbered as (
      select f.*, t.sequence - c.c
        + row_number() over (partition by f.subject order by f.n) as sequence
      from fresh f join counts c using (subject) join taken t using (subject)),
    written as (
      insert into product_events (id, product_id, source, subject, sequence, type, data)
      select id, product_id, ${source}, subject, sequence, type, data::jsonb
      from numbered order by n
      on conflict (id) do nothing
      returning 1)
    select count(*) as n from written`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}
