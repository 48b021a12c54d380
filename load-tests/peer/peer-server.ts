/**
 * The peer of `npm run bench:peer` (chanesteves/flash-sale-system, built by setup.sh outside this
 * repository) as the bench runs it: one process (API + its in-process BullMQ processor) on its
 * own redis-server and its own PostgreSQL database, configured by its env, and what the bench
 * reads back of its state (its fixed Redis keys and its `orders` table).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { until } from '../bench/processes.js';
import { progress } from '../bench/report.js';

/** The commit setup.sh checks out (keep the two in step). */
export const PEER_COMMIT = '5b008904f0bdad65162abaada09ddf4299d9661e';
export const PEER_REPO = 'chanesteves/flash-sale-system';
/** What setup.sh changes in the checked-out copy, and nothing else. */
export const PEER_EDITS = [
  'throttle-out-of-reach: every @nestjs/throttler `limit: <n>` (ThrottlerModule.forRoot in ' +
    'src/app.module.ts: 10/s and 50/10 s; @Throttle on POST /api/purchases: 3/s and 10/10 s) ' +
    'raised to 1000000000; the guard still runs on every request',
];
/** Its purchase route: POST {"userId"} -> 201 sold, 410 sold out, 409 repeat buyer, 429 limited. */
export const PEER_PURCHASE_PATH = '/api/purchases';

/** The versions its install resolved (it ships no lockfile), of the parts that do the work. */
export function peerVersions(peerDir: string): Record<string, string> {
  const names = ['@nestjs/core', '@nestjs/platform-express', 'express', '@nestjs/throttler'];
  names.push('@nestjs/bullmq', 'bullmq', 'ioredis', 'typeorm', 'pg');
  const version = (name: string) => {
    // an npm workspace: hoisted to the root unless the server needs its own
    for (const dir of [join(peerDir, 'server'), peerDir]) {
      try {
        const file = join(dir, 'node_modules', name, 'package.json');
        return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
      } catch {
        // not here
      }
    }
    return 'unknown';
  };
  return Object.fromEntries(names.map((n) => [n, version(n)]));
}

// the peer's keys, fixed in its source (one sale per Redis)
const STOCK_KEY = 'flash_sale:stock_count';
const BUYERS_KEY = 'flash_sale:purchased_users';

/** A database of its own in the bench's PostgreSQL (TypeORM `synchronize` makes its `orders`). */
export async function peerDatabase(databaseUrl: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface PeerInstance {
  name: string;
  base: string;
  proc: ChildProcess;
  redisUrl: string;
  databaseUrl: string;
  seeded: number;
}

/**
 * Starts `node dist/main.js` of the built peer: its sale open from an hour ago to a day ahead,
 * `stock` units (its STOCK_QUANTITY, set in Redis once at start), NODE_ENV=production (which
 * only turns TypeORM's per-query logging off). Its output goes to `logFile`: it logs every
 * request and every order at its default level, as it ships.
 */
export async function startPeer(o: {
  name: string;
  peerDir: string;
  port: number;
  redisUrl: string;
  databaseUrl: string;
  stock: number;
  logFile: string;
}): Promise<PeerInstance> {
  const redis = new URL(o.redisUrl);
  const now = Date.now();
  const out = openSync(o.logFile, 'a');
  const proc = spawn(process.execPath, [join(o.peerDir, 'server', 'dist', 'main.js')], {
    cwd: join(o.peerDir, 'server'),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      PORT: String(o.port),
      REDIS_HOST: redis.hostname,
      REDIS_PORT: redis.port,
      DATABASE_URL: o.databaseUrl,
      SALE_START_TIME: new Date(now - 3_600_000).toISOString(),
      SALE_END_TIME: new Date(now + 86_400_000).toISOString(),
      STOCK_QUANTITY: String(o.stock),
    },
    stdio: ['ignore', out, out],
  });
  proc.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') progress(`peer ${o.name} exited (${code ?? signal})`);
  });
  const base = `http://127.0.0.1:${o.port}`;
  await until(
    `the peer (${o.name}); its log: ${o.logFile}`,
    async () => {
      if (proc.exitCode !== null) throw new Error(`peer ${o.name} exited; see ${o.logFile}`);
      const res = await fetch(`${base}/api/health`);
      return res.ok && ((await res.json()) as { status: string }).status === 'ok';
    },
    120_000,
  );
  return { ...o, base, proc, seeded: o.stock };
}

export interface PeerState {
  /** its Redis stock counter */
  stock: number;
  /** shoppers in its purchased set */
  buyers: number;
  /** rows in its `orders` table */
  rows: number;
}

/** Reads the peer's state over connections of the bench's own, kept open (polls stay cheap). */
export class PeerProbe {
  private readonly redis: Redis;
  private readonly db: pg.Client;

  private constructor(readonly peer: PeerInstance) {
    this.redis = new Redis(peer.redisUrl, { maxRetriesPerRequest: 1 });
    this.db = new pg.Client({ connectionString: peer.databaseUrl });
  }

  static async open(peer: PeerInstance): Promise<PeerProbe> {
    const probe = new PeerProbe(peer);
    await probe.db.connect();
    return probe;
  }

  async state(): Promise<PeerState> {
    const [stock, buyers, rows] = await Promise.all([
      this.redis.get(STOCK_KEY),
      this.redis.scard(BUYERS_KEY),
      this.db.query<{ n: string }>('select count(*) as n from orders'),
    ]);
    return { stock: Number(stock), buyers, rows: Number(rows.rows[0]!.n) };
  }

  /** Its state once every sale it made has its order row (its BullMQ queue drained). */
  async persisted(timeoutMs = 600_000): Promise<PeerState> {
    let s: PeerState | undefined;
    await until(
      `persistence of the peer's (${this.peer.name}) sales`,
      async () => {
        s = await this.state();
        return s.rows >= this.peer.seeded - s.stock;
      },
      timeoutMs,
    );
    return s!;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
    await this.db.end();
  }
}
