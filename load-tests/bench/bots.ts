/**
 * `npm run bench:bots`: what admission limits change for ordinary shoppers when bots hammer a
 * sale, in one run on the same servers: the same sale twice, once through an API without limits
 * and once through one with RATE_LIMIT_USER / RATE_LIMIT_IP on.
 *   - bots: 50 shoppers, 10 per client address, each sending purchases back to back (2 at a time)
 *     from 1 s before the start until the stock is gone;
 *   - ordinary shoppers: 2 000, each from an address of their own, one purchase each at a random
 *     moment of the sale's first 2 s (a 503 / 429 is retried once after its Retry-After).
 * Reports the share of the stock each group got, and the bots' requests and refusals. A table,
 * then one JSON line.
 *
 * Options: --stock 300 --limit-per-user 10 --bots 50 --shoppers 2000 --user-rate 2/s
 *          --ip-rate 20/s --redis-url --database-url --no-write --update-report
 */
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { createCore } from '../../src/composition/core.js';
import {
  apiServices,
  serveApi,
  startOrderQueue,
  startOrderWorker,
} from '../../src/composition/roles.js';
import { createLogger } from '../../src/log.js';
import { reconcile } from '../../src/orders/index.js';
import { machine, progress, ratio, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const LEAD_MS = 1_500;
const SHOPPERS_OVER_MS = 2_000;

interface Outcome {
  variant: string;
  stock: number;
  botUnits: number;
  shopperUnits: number;
  botShare: number;
  shoppersServed: number;
  botRequests: number;
  bot429: number;
  shopper429: number;
  reconciled: string;
}

async function main() {
  const { values } = parseArgs({
    options: {
      stock: { type: 'string', default: '300' },
      'limit-per-user': { type: 'string', default: '10' },
      bots: { type: 'string', default: '50' },
      shoppers: { type: 'string', default: '2000' },
      'user-rate': { type: 'string', default: '2/s' },
      'ip-rate': { type: 'string', default: '20/s' },
      'redis-url': { type: 'string' },
      'database-url': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  const stock = Number(values.stock);
  const limitPerUser = Number(values['limit-per-user']);
  const bots = Number(values.bots);
  const shoppers = Number(values.shoppers);
  const stack = await benchStack({
    redisUrl: values['redis-url'],
    databaseUrl: values['database-url'],
  });
  const run = randomBytes(3).toString('hex');
  const base = {
    ...process.env,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `bots${run}`,
    QUEUE_PREFIX: `{bots${run}}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN: 'bench-admin-token-0123456789',
    TRUST_PROXY: 'true',
  };
  const outcomes: Outcome[] = [];
  try {
    for (const variant of ['limits off', 'limits on'] as const) {
      const env =
        variant === 'limits on'
          ? { ...base, RATE_LIMIT_USER: values['user-rate'], RATE_LIMIT_IP: values['ip-rate'] }
          : base;
      const loaded = loadConfig(env);
      // an ephemeral port
      const config = { ...loaded, http: { ...loaded.http, port: 0 } };
      const rt = createCore(config, createLogger(config));
      try {
        const queue = startOrderQueue(rt);
        await startOrderWorker(rt, queue);
        const server = await serveApi(rt, apiServices(rt, queue));
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const productId = `bots-${variant.replace(' ', '-')}-${run}`;
        const startsAt = Date.now() + LEAD_MS;
        await rt.products.seed(productId, {
          total: stock,
          segments: 16,
          strategy: 'lockfree',
          limitPerUser,
          startsAt: new Date(startsAt),
        });
        progress(`${variant}: ${bots} bots hammer, ${shoppers} shoppers arrive over 2 s`);
        const o = await sale(url, productId, startsAt, { stock, bots, shoppers });
        const r = (await reconcile({ store: rt.orderStore, rows: rt.orderRows }, productId))!;
        outcomes.push({
          variant,
          stock,
          ...o,
          botShare: ratio(o.botUnits, stock),
          reconciled: r.ok && r.remaining + r.pending + r.persisted === stock ? 'clean' : 'NO',
        });
      } finally {
        await rt.lifecycle.close();
      }
    }
  } finally {
    await stack.stop();
  }
  const [off, on] = outcomes as [Outcome, Outcome];
  const figures = {
    bench: 'bots',
    machine: machine(),
    stock,
    limitPerUser,
    bots,
    shoppers,
    limits: { user: values['user-rate'], ip: values['ip-rate'] },
    results: outcomes,
    ratios: { botShareOnVsOff: ratio(on.botShare, off.botShare) },
  };
  const text = [
    `Bots vs shoppers: ${stock} units (${limitPerUser} per shopper), ${bots} bots (10 per address, ` +
      `2 requests at a time each), ${shoppers} shoppers (one request each over 2 s); ` +
      `limits: ${values['user-rate']} per shopper, ${values['ip-rate']} per address`,
    '',
    table(outcomes.map((o) => ({ ...o }))),
    '',
    `bots' share of the stock: ${off.botShare} without limits, ${on.botShare} with`,
    '',
    JSON.stringify(figures),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (!values['no-write']) saveRun('bots', text, values['update-report']);
  if (outcomes.some((o) => o.reconciled !== 'clean')) process.exitCode = 1;
}

async function sale(
  url: string,
  productId: string,
  startsAt: number,
  n: { stock: number; bots: number; shoppers: number },
) {
  let botUnits = 0;
  let shopperUnits = 0;
  let shoppersServed = 0;
  let botRequests = 0;
  let bot429 = 0;
  let shopper429 = 0;
  let soldOut = false;
  const buy = (user: string, ip: string) =>
    fetch(`${url}/seckill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': user, 'x-forwarded-for': ip },
      body: JSON.stringify({ productId }),
    });
  const stopAt = startsAt + 10_000;
  const botLoop = async (bot: number) => {
    const ip = `10.66.0.${Math.floor(bot / 10)}`;
    while (!soldOut && Date.now() < stopAt) {
      botRequests++;
      const res = await buy(`bot${bot}`, ip);
      const body = (await res.json()) as { type?: string };
      if (res.status === 202) botUnits++;
      else if (res.status === 429) bot429++;
      else if (body.type?.endsWith(':sold-out')) soldOut = true;
    }
  };
  const shopper = async (i: number) => {
    const at = startsAt + Math.random() * SHOPPERS_OVER_MS;
    await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
    const ip = `10.${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await buy(`shopper${i}`, ip);
      await res.arrayBuffer();
      if (res.status === 202) {
        shopperUnits++;
        shoppersServed++;
        return;
      }
      if (res.status === 429) shopper429++;
      if (res.status !== 503 && res.status !== 429) return;
      const wait = Number(res.headers.get('retry-after') ?? 1) * 1_000;
      await new Promise((r) => setTimeout(r, wait));
    }
  };
  await Promise.all([
    ...Array.from({ length: n.bots * 2 }, (_, i) => botLoop(i % n.bots)),
    ...Array.from({ length: n.shoppers }, (_, i) => shopper(i)),
  ]);
  return { botUnits, shopperUnits, shoppersServed, botRequests, bot429, shopper429 };
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:bots failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
