/**
 * `npm run bench:door-page`: what the door (CHALLENGE=pow) adds to a clean shopper's join in a
 * real Chromium, in one run on the same servers: the queue page of a room product with the door
 * and of one without, opened by fresh shoppers in turn (one with, one without, so both see the
 * same machine), each timed from the page's navigation to the join's answer. The added wait is
 * the median join with the door minus the median without (goal: at most 1.5 s, docs/fairness.md);
 * the page's own figures (hashing in the worker, the floor) come from door.js. A table, then one
 * JSON line.
 *
 * Options: --shoppers 8 --redis-url --database-url --no-write --update-report
 */
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig, NO_RATE_LIMITS } from '../../src/config/index.js';
import { createCore } from '../../src/composition/core.js';
import { apiServices, serveApi, startOrderQueue } from '../../src/composition/roles.js';
import { createLogger } from '../../src/log.js';
import { CHROMIUM, launchBrowser } from '../../test/support/browser.js';
import { machine, percentile, progress, saveRun, table } from './report.js';
import { benchStack } from './stack.js';

const GOAL_MS = 1_500;

interface Join {
  door: boolean;
  ms: number;
  solveMs?: number;
  floorMs?: number;
}

async function main() {
  const { values } = parseArgs({
    options: {
      shoppers: { type: 'string', default: '8' },
      'redis-url': { type: 'string' },
      'database-url': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
    },
  });
  if (!CHROMIUM) throw new Error('bench:door-page needs chromium (apt-get install chromium)');
  const shoppers = Number(values.shoppers);
  const stack = await benchStack({
    redisUrl: values['redis-url'],
    databaseUrl: values['database-url'],
  });
  const run = randomBytes(3).toString('hex');
  const withDoor = `door-on-${run}`;
  const without = `door-off-${run}`;
  const loaded = loadConfig({
    ...process.env,
    REDIS_URL: stack.redisUrl,
    DATABASE_URL: stack.databaseUrl,
    KEY_PREFIX: `doorpage${run}`,
    QUEUE_PREFIX: `{doorpage${run}}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN: 'bench-admin-token-0123456789',
    TRUST_PROXY: 'true',
    SALE_TOKEN_SECRET: 'a-sale-token-secret-for-the-door-bench-012345',
    CHALLENGE: 'pow',
    CHALLENGE_PRODUCTS: withDoor,
    CHALLENGE_SECRET: 'a-challenge-secret-for-the-door-bench-0123',
  });
  const config = { ...loaded, http: { ...loaded.http, port: 0 } };
  const rt = createCore(config, createLogger(config));
  const joins: Join[] = [];
  try {
    const server = await serveApi(rt, apiServices(rt, startOrderQueue(rt)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const productId of [withDoor, without]) {
      await rt.products.seed(productId, {
        total: shoppers * 2,
        segments: 2,
        strategy: 'segmented',
        limitPerUser: 1,
        waitingRoom: { admitPerSecond: 100, maxActive: shoppers * 2, admittedForSeconds: 300 },
      });
    }
    const browser = await launchBrowser();
    try {
      for (let i = 0; i < shoppers; i++) {
        for (const door of [true, false]) {
          const productId = door ? withDoor : without;
          // each shopper from an address of their own: one /24 crowded with identities is
          // flagged (FAIRNESS_IDENTITIES_PER_BLOCK) and pays the flagged floor, not the clean one
          const context = await browser.newContext({
            extraHTTPHeaders: { 'x-forwarded-for': `10.${door ? 1 : 2}.${i}.1` },
          });
          try {
            const page = await context.newPage();
            const joined = page.waitForResponse(
              (r) => r.request().method() === 'POST' && r.url().endsWith('/queue'),
              { timeout: 30_000 },
            );
            const t0 = performance.now();
            await page.goto(`${url}/queue/${productId}#shopper=s${i}${door ? 'd' : 'n'}`);
            const res = await joined;
            const ms = Math.round(performance.now() - t0);
            if (res.status() !== 201 && res.status() !== 200) {
              throw new Error(`join of ${productId}: ${res.status()} ${await res.text()}`);
            }
            const last = await page.evaluate<{ solveMs: number; floorMs: number } | null>(
              'window.seckillDoor.last()',
            );
            joins.push({ door, ms, ...(last ?? {}) });
            progress(`shopper ${i} ${door ? 'with' : 'without'} the door: ${ms} ms`);
          } finally {
            await context.close();
          }
        }
      }
    } finally {
      await browser.close();
    }
    server.close();
  } finally {
    await rt.lifecycle.close();
    await stack.stop();
  }
  const stats = (door: boolean) => {
    const ms = joins
      .filter((j) => j.door === door)
      .map((j) => j.ms)
      .sort((a, b) => a - b);
    return { p50: percentile(ms, 50), p90: percentile(ms, 90), max: ms[ms.length - 1] ?? 0 };
  };
  const on = stats(true);
  const off = stats(false);
  const solve = joins
    .filter((j) => j.door)
    .map((j) => j.solveMs ?? 0)
    .sort((a, b) => a - b);
  const floorMs = joins.find((j) => j.door)?.floorMs ?? 0;
  const addedMs = { p50: on.p50 - off.p50, p90: on.p90 - off.p90 };
  const figures = {
    bench: 'door-page',
    machine: machine(),
    shoppers,
    floorMs,
    joinMs: { withDoor: on, without: off },
    solveMs: { p50: percentile(solve, 50), max: solve[solve.length - 1] ?? 0 },
    addedMs,
    goalMs: GOAL_MS,
    withinGoal: addedMs.p90 <= GOAL_MS,
  };
  const text = [
    `The door in the browser: ${shoppers} clean shoppers per side, the queue page in Chromium, ` +
      `navigation to the join's answer; CHALLENGE=pow, clean floor ${floorMs} ms`,
    '',
    table([
      { door: 'off', 'p50 ms': off.p50, 'p90 ms': off.p90, 'max ms': off.max, 'solve ms': '-' },
      {
        door: 'pow',
        'p50 ms': on.p50,
        'p90 ms': on.p90,
        'max ms': on.max,
        'solve ms': `${figures.solveMs.p50} (max ${figures.solveMs.max})`,
      },
    ]),
    '',
    `added wait: ${addedMs.p50} ms at the median, ${addedMs.p90} ms at p90 (goal <= ${GOAL_MS} ms)`,
    '',
    JSON.stringify(figures),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (!values['no-write']) saveRun('door-page', text, values['update-report']);
}

main().catch((err: unknown) => {
  process.stderr.write(`${String((err as Error).stack ?? err)}\n`);
  process.exit(1);
});
