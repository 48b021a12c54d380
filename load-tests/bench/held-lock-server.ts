/**
 * The held-lock baseline (held-lock.ts) behind a small node:http server, so `npm run bench`'s wrk
 * and k6's compare.js drive it as they drive the API. Its routes answer as the API's do:
 *   PUT  /admin/products/:id            {total, strategy, segments}: seed (global: 1 segment)
 *   POST /seckill                       {productId}, X-User-Id: 202 sold, 409 sold-out, 503 busy
 *   POST /admin/products/:id/reconcile  every segment's stock + sold = its units
 *   POST /bench/restocks                {productId, segments, perSecond}: hold that real
 *                                        product's segment locks the full way, at that rate
 *   DELETE /bench/restocks              stop them; answers {holds}
 *
 *   node --import tsx held-lock-server.ts   (REDIS_URL, KEY_PREFIX, ADMIN_TOKEN, PORT)
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { LockClient } from '../../src/lock/index.js';
import { createRedis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';
import { HeldLockShop, restockThrough } from './held-lock.js';

const { REDIS_URL, KEY_PREFIX, ADMIN_TOKEN, PORT } = process.env;
if (!REDIS_URL || !KEY_PREFIX || !ADMIN_TOKEN || !PORT) {
  throw new Error('held-lock-server needs REDIS_URL, KEY_PREFIX, ADMIN_TOKEN and PORT');
}

const redis = createRedis(REDIS_URL, { name: 'held-lock' });
const pubsub = new PubSub(createRedis(REDIS_URL, { name: 'held-lock-sub', role: 'subscriber' }));
const keys = new Keys(KEY_PREFIX);
const locks = new LockClient({ redis, pubsub, keys });
const shop = new HeldLockShop(redis, locks, keys);
let restocks: { stop: AbortController; done: Promise<number> } | undefined;

const PROBLEM = 'application/problem+json';

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json') {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function problem(res: ServerResponse, status: number, code: string) {
  send(res, status, { type: `urn:seckill:problem:${code}`, title: code, status }, PROBLEM);
}

function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as never) : {});
      } catch {
        resolve({});
      }
    });
  });
}

async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://x');
  const b = await body(req);
  if (req.method === 'POST' && url.pathname === '/seckill') {
    const user = String(req.headers['x-user-id'] ?? '');
    const outcome = await shop.buy(String(b.productId), user);
    if (outcome === 'sold') return send(res, 202, { orderId: randomUUID(), status: 'pending' });
    if (outcome === 'busy') return problem(res, 503, 'lock-timeout');
    return problem(res, outcome === 'sold-out' ? 409 : 404, outcome);
  }
  if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
  if (req.headers.authorization !== `Bearer ${ADMIN_TOKEN}`)
    return problem(res, 401, 'unauthorized');
  const product = /^\/admin\/products\/([^/]+)(\/reconcile)?$/.exec(url.pathname);
  if (req.method === 'PUT' && product && !product[2]) {
    const segments = b.strategy === 'global' ? 1 : Number(b.segments ?? 16);
    await shop.seed(product[1]!, segments, Number(b.total));
    return send(res, 201, { productId: product[1], segments, total: Number(b.total) });
  }
  if (req.method === 'POST' && product?.[2]) {
    const r = await shop.reconcile(product[1]!);
    return r ? send(res, 200, r) : problem(res, 404, 'unknown-product');
  }
  if (url.pathname === '/bench/restocks' && req.method === 'POST' && !restocks) {
    const stop = new AbortController();
    const target = { id: String(b.productId), segments: Number(b.segments) };
    const done = restockThrough(redis, locks, keys, target, Number(b.perSecond), stop.signal);
    restocks = { stop, done };
    return send(res, 202, { started: target });
  }
  if (url.pathname === '/bench/restocks' && req.method === 'DELETE' && restocks) {
    restocks.stop.abort();
    const holds = await restocks.done;
    restocks = undefined;
    return send(res, 200, { holds });
  }
  problem(res, 404, 'not-found');
}

const server = createServer((req, res) => {
  route(req, res).catch((err: unknown) => {
    process.stderr.write(`[held-lock] ${err instanceof Error ? err.stack : String(err)}\n`);
    if (!res.headersSent) problem(res, 500, 'internal');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  redis.disconnect();
  pubsub.subscriber.disconnect();
  process.exit(0);
});
