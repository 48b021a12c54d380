/** The webhook endpoints' SQL: registration, the list with each one's backlog, status, secrets. */
import { sql } from 'kysely';
import type { Db } from '../../db/index.js';
import type { EventType } from '../feed/index.js';

export interface Endpoint {
  id: string;
  url: string;
  types: EventType[];
  secret: string;
  /** the secret before the last rotation, while it still signs */
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  status: 'active' | 'disabled';
  disabledReason: string | null;
  disabledAt: Date | null;
  createdAt: Date;
}

/** An endpoint's delivery backlog. */
export interface EndpointBacklog {
  /** lanes (orders, other subjects) with events not yet acknowledged (dead letters aside) */
  pending: number;
  /** lanes (orders, other subjects) whose delivery was dead-lettered */
  deadLetters: number;
  /** when the oldest event not yet acknowledged (nor dead) was committed; null when none */
  oldestPendingAt: Date | null;
}

interface EndpointRow {
  id: string;
  url: string;
  types: string[];
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Date | null;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  disabled_at: Date | null;
  created_at: Date;
}

const endpointOf = (row: EndpointRow): Endpoint => ({
  id: row.id,
  url: row.url,
  types: row.types as EventType[],
  secret: row.secret,
  previousSecret: row.previous_secret,
  previousSecretUntil: row.previous_secret_until,
  status: row.status,
  disabledReason: row.disabled_reason,
  disabledAt: row.disabled_at,
  createdAt: row.created_at,
});

export class EndpointsRepository {
  constructor(private readonly db: Db) {}

  async create(endpoint: {
    id: string;
    url: string;
    types: readonly EventType[];
    secret: string;
  }): Promise<Endpoint> {
    const row = await this.db
      .insertInto('webhook_endpoints')
      .values({ ...endpoint, types: [...endpoint.types] })
      .returningAll()
      .executeTakeFirstOrThrow();
    return endpointOf(row);
  }

  async get(id: string): Promise<Endpoint | undefined> {
    const row = await this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && endpointOf(row);
  }

  /** Every endpoint, oldest first, with its backlog. */
  async list(): Promise<Array<Endpoint & EndpointBacklog>> {
    const r = await sql<EndpointRow & { pending: string; dead: string; oldest: Date | null }>`
      select e.*,
        (select count(*) from webhook_lanes l where l.endpoint_id = e.id
           and l.acked_version < l.wanted_version and l.dead_version is null) as pending,
        (select count(*) from webhook_lanes l where l.endpoint_id = e.id
           and l.dead_version is not null) as dead,
        (select min(pending_since) from webhook_lanes l where l.endpoint_id = e.id
           and l.acked_version < l.wanted_version and l.dead_version is null) as oldest
      from webhook_endpoints e order by e.created_at, e.id`.execute(this.db);
    return r.rows.map((row) => ({
      ...endpointOf(row),
      pending: Number(row.pending),
      deadLetters: Number(row.dead),
      oldestPendingAt: row.oldest,
    }));
  }

  /**
   * Every endpoint, what it takes and whether it is active: what the relay hands events on to
   * (a disabled one's wait for it to be enabled).
   */
  async all(): Promise<Array<Pick<Endpoint, 'id' | 'types' | 'status'>>> {
    const rows = await this.db
      .selectFrom('webhook_endpoints')
      .select(['id', 'types', 'status'])
      .execute();
    return rows.map((r) => ({ id: r.id, types: r.types as EventType[], status: r.status }));
  }

  /** @returns the endpoint after the change; undefined when there is none */
  async setStatus(
    id: string,
    status: 'active' | 'disabled',
    reason?: string,
  ): Promise<Endpoint | undefined> {
    if (status === 'active') {
      // what waited while it was disabled is due at once (the relay's next run queues it)
      await this.db
        .updateTable('webhook_lanes')
        .set({ enqueued_at: sql`now() - interval '1 hour'` })
        .where('endpoint_id', '=', id)
        .whereRef('acked_version', '<', 'wanted_version')
        .where('dead_version', 'is', null)
        .execute();
    }
    const row = await this.db
      .updateTable('webhook_endpoints')
      .set(
        status === 'active'
          ? { status, disabled_reason: null, disabled_at: null }
          : { status, disabled_reason: reason ?? 'disabled by an admin', disabled_at: sql`now()` },
      )
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && endpointOf(row);
  }

  /** A new secret; the one it replaces still signs for `graceHours`. */
  async rotate(id: string, secret: string, graceHours: number): Promise<Endpoint | undefined> {
    const row = await this.db
      .updateTable('webhook_endpoints')
      .set({
        previous_secret: sql`secret`,
        previous_secret_until: sql`now() + ${graceHours} * interval '1 hour'`,
        secret,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && endpointOf(row);
  }
}
