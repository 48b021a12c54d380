/**
 * Each row of `npm run bench` starts on empty order tables: a row's PostgreSQL cost per order
 * grows with the rows every earlier row left (the random keys of the orders' and the events'
 * indexes touch more pages, each first touched after a checkpoint written whole into the WAL:
 * 55 us of PostgreSQL CPU an order at 100 000 rows, 78 at 700 000), so a row late in a full run
 * paid for the rows before it, and a partial run (`--only`) read other figures for the same row.
 * The rows' invariants are checked before their orders are cleared (http.ts).
 */
import pg from 'pg';

/** What a sale leaves in PostgreSQL: its orders (payment intents with them), events and lanes. */
const ORDER_TABLES = ['orders', 'order_events', 'webhook_lanes'];

/** Empties the order tables of each database, then checkpoints (every row starts after one). */
export async function freshOrders(databaseUrls: readonly string[]): Promise<void> {
  for (const url of databaseUrls) {
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      await db.query(`truncate ${ORDER_TABLES.join(', ')} cascade`);
      await db.query('checkpoint');
    } finally {
      await db.end();
    }
  }
}
