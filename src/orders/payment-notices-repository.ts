/**
 * Payment notices handled once each, by who sent them and their id: a provider redelivers a
 * notice (same id, new timestamp and signature) until it sees a 2xx, and an attacker may replay
 * a captured one inside the tolerance. The first delivery is handled inside a transaction that
 * also records its answer; a redelivery gets that answer back and changes nothing. Two
 * deliveries of one notice at once: the second's insert waits on the first's row until it
 * commits, then reads its answer. Each provider's ids are a namespace of their own: no id one
 * provider sends can stand for another's notice.
 */
import { sql } from 'kysely';
import type { Db } from '../db/index.js';

export interface NoticeAnswer {
  status: number;
  body: unknown;
}

/** Who sent a notice: Stripe (its event id), or a provider signing as Standard Webhooks. */
export type NoticeProvider = 'stripe' | 'standard-webhooks';

/** A notice by its provider and the provider's id of it (Stripe's `evt_...`, a `webhook-id`). */
export interface NoticeKey {
  provider: NoticeProvider;
  id: string;
}

/** How long a notice is remembered: past every provider's retry schedule (Svix: ~28 h). */
export const NOTICE_RETENTION_HOURS = 72;

/**
 * Runs `handle` for the first delivery of `notice` only (in its transaction: `tx` is where its
 * writes go) and records the answer; later deliveries get that answer, `replayed`.
 */
export async function noticeOnce(
  db: Db,
  notice: NoticeKey,
  handle: (tx: Db) => Promise<NoticeAnswer>,
): Promise<NoticeAnswer & { replayed: boolean }> {
  return db.transaction().execute(async (tx) => {
    const claimed = await tx
      .insertInto('payment_notices')
      .values({ provider: notice.provider, id: notice.id, status: null, body: null })
      .onConflict((oc) => oc.columns(['provider', 'id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!claimed) {
      const first = await tx
        .selectFrom('payment_notices')
        .select(['status', 'body'])
        .where('provider', '=', notice.provider)
        .where('id', '=', notice.id)
        .executeTakeFirstOrThrow();
      return { status: first.status!, body: first.body, replayed: true };
    }
    const answer = await handle(tx);
    await tx
      .updateTable('payment_notices')
      .set({ status: answer.status, body: JSON.stringify(answer.body) })
      .where('provider', '=', notice.provider)
      .where('id', '=', notice.id)
      .execute();
    return { ...answer, replayed: false };
  });
}

/** Forgets notices older than the retention. @returns how many */
export async function pruneNotices(db: Db, hours = NOTICE_RETENTION_HOURS): Promise<number> {
  const r = await db
    .deleteFrom('payment_notices')
    .where('received_at', '<', sql<Date>`now() - ${hours} * interval '1 hour'`)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
