import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from '../log.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
export type { Database } from './schema.js';

// timestamptz/int8 parsing stays pg's default (Date / string); counts are cast in SQL.

/**
 * A Kysely instance over a pg pool. Every wait is bounded, so a frozen or unreachable
 * PostgreSQL fails a request (503) instead of hanging it.
 * @param url - postgres:// connection string.
 * @param opts.max - pool size (default 10).
 * @param opts.connectTimeoutMs - longest wait for a connection (default 2 000).
 * @param opts.statementTimeoutMs - a statement running, or unanswered, this long fails: the server
 *   cancels it (statement_timeout), and the client stops waiting (query_timeout) for a server
 *   that does not answer at all. Default 5 000.
 */
export function createDb(
  url: string,
  opts: {
    max?: number;
    logger?: Logger | undefined;
    connectTimeoutMs?: number;
    statementTimeoutMs?: number;
  } = {},
): Db {
  const statementTimeoutMs = opts.statementTimeoutMs ?? 5_000;
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 2_000,
    statement_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + 1_000,
    // Without a listener an idle client's error (server restart) would crash the process.
  });
  pool.on('error', (err) => opts.logger?.warn({ err }, 'idle PostgreSQL client error'));
  // pg-pool removes its listener while a client is checked out; a socket that dies mid-query
  // (PostgreSQL restarted) then emits 'error' with no listener, which would crash the process.
  // The query itself still fails (and is retried by its caller).
  pool.on('connect', (client) => {
    client.on('error', (err) => opts.logger?.warn({ err }, 'PostgreSQL connection lost'));
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

export async function pingDb(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
