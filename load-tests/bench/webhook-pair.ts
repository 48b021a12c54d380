/**
 * An API process and a worker process of their own, with one webhook endpoint subscribed to
 * every order event and a local receiver (webhook-receiver.mjs) taking them: what `npm run
 * bench`'s "production + webhook" row runs against (the same shape as the production row's pair,
 * events pushed besides), and what `npm run bench:events` measures. Its own database on the same
 * PostgreSQL, its own key and queue prefixes on the same Redis: the other pair's orders are no
 * events of its endpoint, and its relay has nothing of theirs to hand on.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { createDb } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { freePort } from '../../src/launcher/process.js';
import { admin } from './admin.js';
import { child, cli, ROOT, stopAll, until } from './processes.js';

export interface ReceiverStats {
  received: number;
  acked: number;
  failed: number;
  unsigned: number;
  /** ms since the epoch of the first and last acknowledged event */
  first: number;
  last: number;
  /** per event acknowledged (once): arrival minus the event's time */
  lagsMs: number[];
}

export interface WebhookPair {
  base: string;
  /** the pair's own database (on the stack's PostgreSQL server) */
  databaseUrl: string;
  api: ChildProcess;
  worker: ChildProcess;
  receiver: ChildProcess;
  stats(): Promise<ReceiverStats>;
  /** clears the receiver's figures and sets its share of 500s */
  reset(failRate: number): Promise<void>;
  /** waits until the receiver acknowledged `events` events since its last reset */
  delivered(events: number, timeoutMs: number): Promise<ReceiverStats>;
  stop(): Promise<void>;
}

/** A database of its own on the stack's PostgreSQL server, migrated. */
async function ownDatabase(url: string, name: string): Promise<string> {
  const server = new URL(url);
  const admins = new pg.Client({ connectionString: url });
  await admins.connect();
  try {
    await admins.query(`create database ${name}`);
  } finally {
    await admins.end();
  }
  server.pathname = `/${name}`;
  const db = createDb(server.toString());
  await migrateToLatest(db);
  await db.destroy();
  return server.toString();
}

export async function startWebhookPair(o: {
  databaseUrl: string;
  env: NodeJS.ProcessEnv;
  run: string;
  /** its receiver's signature check (off: a receiver's CPU is not the sale's) */
  verify?: boolean;
  failRate?: number;
}): Promise<WebhookPair> {
  const databaseUrl = await ownDatabase(o.databaseUrl, `hooks${o.run}`);
  const [port, receiverPort] = [await freePort(), await freePort()];
  const receiver = child(
    [
      join(ROOT, 'load-tests', 'bench', 'webhook-receiver.mjs'),
      String(receiverPort),
      '--fail-rate',
      String(o.failRate ?? 0),
    ],
    o.env,
    'webhook receiver',
  );
  const env = {
    ...o.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    KEY_PREFIX: `hooks${o.run}`.slice(0, 16),
    QUEUE_PREFIX: `{hooks${o.run}}`,
    WEBHOOK_ALLOW_PRIVATE: 'true',
  };
  const api = child(cli('serve'), env, 'API (webhook)');
  const worker = child(cli('worker'), env, 'worker (webhook)');
  const base = `http://127.0.0.1:${port}`;
  const receiverBase = `http://127.0.0.1:${receiverPort}`;
  await until('the webhook API', async () => (await fetch(`${base}/readyz`)).ok, 60_000);
  await until('the receiver', async () => (await fetch(`${receiverBase}/stats`)).ok, 30_000);
  const r = await admin(base, 'POST', '/admin/webhook-endpoints', {
    url: `${receiverBase}/hooks`,
    events: ['*'],
  });
  if (r.status !== 201) throw new Error(`registering the receiver: ${r.status} ${await r.text()}`);
  const { secret } = (await r.json()) as { secret: string };
  if (o.verify) await fetch(`${receiverBase}/secret`, { method: 'POST', body: secret });
  const stats = async () => (await (await fetch(`${receiverBase}/stats`)).json()) as ReceiverStats;
  return {
    base,
    databaseUrl,
    api,
    worker,
    receiver,
    stats,
    async reset(failRate) {
      await fetch(`${receiverBase}/fail-rate/${failRate}`, { method: 'POST' });
      await fetch(`${receiverBase}/reset`, { method: 'POST' });
    },
    async delivered(events, timeoutMs) {
      let last: ReceiverStats | undefined;
      await until(
        `${events} events at the receiver`,
        async () => (last = await stats()).acked >= events,
        timeoutMs,
      );
      return last!;
    },
    stop: () => stopAll([api, worker, receiver]),
  };
}
