/** The operators' audit log (services/operator/audit-log.ts): its rows in `admin_audit`. */
import { sql } from 'kysely';
import type { AuditOutcome } from './schema.js';
import type { Db } from './index.js';

interface Actor {
  via: 'token' | 'session' | 'cli';
  session?: string | undefined;
  operator?: string | undefined;
  address?: string | undefined;
}

export class AuditRepository {
  constructor(private readonly db: Db) {}

  /** A change about to run: its row, `started`; returns its id. */
  async begin(entry: {
    actor: Actor;
    action: string;
    productId: string | undefined;
    request: unknown;
  }): Promise<string> {
    const row = await this.db
      .insertInto('admin_audit')
      .values({
        via: entry.actor.via,
        session: entry.actor.session ?? null,
        operator: entry.actor.operator ?? null,
        address: entry.actor.address ?? null,
        action: entry.action,
        product_id: entry.productId ?? null,
        request: JSON.stringify(entry.request),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** How the change ended, and the sale it acted on. */
  async finish(id: string, outcome: AuditOutcome, result: unknown, epoch?: number): Promise<void> {
    await this.db
      .updateTable('admin_audit')
      .set({
        outcome,
        result: JSON.stringify(result),
        finished_at: sql<Date>`now()`,
        ...(epoch !== undefined && { epoch }),
      })
      .where('id', '=', id)
      .execute();
  }

  /** Newest first, `limit` of them, older than `beforeId` when given. */
  async list(query: {
    productId?: string | undefined;
    limit: number;
    beforeId?: string | undefined;
  }) {
    let q = this.db.selectFrom('admin_audit').selectAll().orderBy('id', 'desc').limit(query.limit);
    if (query.productId !== undefined) q = q.where('product_id', '=', query.productId);
    if (query.beforeId !== undefined) q = q.where('id', '<', query.beforeId);
    const rows = await q.execute();
    return rows.map((r) => ({
      id: r.id,
      at: r.at.toISOString(),
      actor: {
        via: r.via,
        ...(r.session !== null && { session: r.session }),
        ...(r.operator !== null && { operator: r.operator }),
        ...(r.address !== null && { address: r.address }),
      },
      action: r.action,
      productId: r.product_id,
      epoch: r.epoch,
      request: r.request,
      outcome: r.outcome,
      result: r.result,
      finishedAt: r.finished_at?.toISOString() ?? null,
    }));
  }
}
