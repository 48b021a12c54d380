/**
 * Standard Webhooks deliveries by their `webhook-id`: the provider redelivers a notice (same id,
 * new timestamp and signature) until it sees a 2xx, and an attacker may replay a captured one
 * inside the tolerance. The first delivery is handled inside a transaction that also records its
 * answer; a redelivery gets that answer back and changes nothing. Two deliveries of one id at
 * once: the second's insert waits on the first's row until it commits, then reads its answer.
 */
import { sql } from 'kysely';
import type { Db } from '../db/index.js';

export interface NoticeAnswer {
  status: number;
  body: unknown;
}

/** How long a delivery is remembered: past every provider's retry schedule (Svix: ~28 h). */
export const NOTICE_RETENTION_HOURS = 72;

/**
 * Runs `handle` for the first delivery of `webhookId` only (in its transaction: `tx` is where
 * its writes go) and records the answer; later deliveries get that answer, `replayed`.
 */
export async function noticeOnce(
  db: Db,
  webhookId: string,
  handle: (tx: Db) => Promise<NoticeAnswer>,
): Promise<NoticeAnswer & { replayed: boolean }> {
  return db.transaction().execute(async (tx) => {
    const claimed = await tx
      .insertInto('webhook_deliveries')
      .values({ id: webhookId, status: null, body: null })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!claimed) {
      const first = await tx
        .selectFrom('webhook_deliveries')
        .select(['status', 'body'])
        .where('id', '=', webhookId)
        .executeTakeFirstOrThrow();
      return { status: first.status!, body: first.body, replayed: true };
    }
    const answer = await handle(tx);
    await tx
      .updateTable('webhook_deliveries')
      .set({ status: answer.status, body: JSON.stringify(answer.body) })
      .where('id', '=', webhookId)
      .execute();
    return { ...answer, replayed: false };
  });
}

/** Forgets deliveries older than the retention. @returns how many */
export async function pruneNotices(db: Db, hours = NOTICE_RETENTION_HOURS): Promise<number> {
  const r = await db
    .deleteFrom('webhook_deliveries')
    .where('received_at', '<', sql<Date>`now() - ${hours} * interval '1 hour'`)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
