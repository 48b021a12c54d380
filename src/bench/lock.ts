/**
 * `npm run bench:lock`: the lock under contention, every variant in one run on one Redis.
 *   - 1 lock vs 16 locks, 50 contenders (default mode, pub/sub wake-up)
 *   - pub/sub wake-up vs plain retry (poll every 5 ms), 1 lock
 *   - fair vs default, 1 lock
 *   - 16 locks in fair mode, and 16 locks through withLock (the context API)
 * The contenders are spread over --processes LockClients (default 5), each with its own command
 * connection (auto-pipelined) and subscriber, as 5 API processes with 10 requests in flight each
 * would be. A section is acquire -> release with no work inside, so the figures are the lock's
 * own cost. Prints a table, the ratios, then one JSON line.
 *
 * Options: --contenders 50 --processes 5 --duration 3000 (ms per scenario) --no-pipelining
 * --only "<scenario>" --redis-url <url> (else a throwaway redis-server is started).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { loadConfig } from '../config/index.js';
import { LockClient } from '../lock/index.js';
import { createRedis } from '../redis/connection.js';
import { Keys } from '../redis/keys.js';
import { PubSub } from '../redis/pubsub.js';
import { benchRedis } from './redis.js';
import { machine, percentile, pickScenarios, progress, ratio, table } from './report.js';

interface Scenario {
  name: string;
  locks: number;
  fair: boolean;
  wakeup: 'pubsub' | 'poll';
  /** withLock (lock contexts, AsyncLocalStorage) instead of acquire()/release() */
  contextApi?: boolean;
  /** The plain prototype: SET NX PX, compare-and-delete, retry at once (a spin) when taken. */
  plain?: boolean;
}

// The context-API row runs last: once AsyncLocalStorage is used, Node 20 keeps its promise hooks
// on for the whole process, which would slow every later row.
const SCENARIOS: Scenario[] = [
  { name: 'plain SET NX spin, 1 lock', locks: 1, fair: false, wakeup: 'poll', plain: true },
  { name: 'plain SET NX spin, 16 locks', locks: 16, fair: false, wakeup: 'poll', plain: true },
  { name: '1 lock', locks: 1, fair: false, wakeup: 'pubsub' },
  { name: '16 locks', locks: 16, fair: false, wakeup: 'pubsub' },
  { name: '1 lock, poll 5 ms', locks: 1, fair: false, wakeup: 'poll' },
  { name: '1 lock, fair', locks: 1, fair: true, wakeup: 'pubsub' },
  { name: '16 locks, fair', locks: 16, fair: true, wakeup: 'pubsub' },
  { name: '16 locks, withLock', locks: 16, fair: false, wakeup: 'pubsub', contextApi: true },
];

async function commandsProcessed(redis: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1] ?? 0);
}

const COMPARE_AND_DELETE =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** The prototype the issue measured against: no reentrancy, no fencing, no wake-up. */
async function plainSection(redis: Redis, key: string, token: string): Promise<void> {
  while ((await redis.set(key, token, 'PX', 10_000, 'NX')) !== 'OK') {
    await new Promise((r) => setImmediate(r));
  }
  await redis.eval(COMPARE_AND_DELETE, 1, key, token);
}

async function run(
  url: string,
  s: Scenario,
  contenders: number,
  processes: number,
  pipelining: boolean,
  durationMs: number,
) {
  const keys = new Keys(`bench${randomBytes(3).toString('hex')}`);
  const clients = Array.from({ length: processes }, (_, i) => {
    const redis = createRedis(url, {
      name: `bench-${i}`,
      overrides: { enableAutoPipelining: pipelining },
    });
    const subscriber = createRedis(url, { name: `bench-sub-${i}`, role: 'subscriber' });
    const pubsub = new PubSub(subscriber);
    const locks = new LockClient({ redis, pubsub, keys, wakeup: s.wakeup, pollIntervalMs: 5 });
    return { redis, subscriber, pubsub, locks };
  });
  await Promise.all(clients.flatMap((c) => [c.redis.ping(), c.subscriber.ping()]));
  const counts = new Array<number>(contenders).fill(0);
  const waits: number[] = [];
  const probe = clients[0]!.redis;
  const callsBefore = await commandsProcessed(probe);
  const started = performance.now();
  const until = started + durationMs;
  const section = async (c: (typeof clients)[number], name: string, i: number) => {
    const t = performance.now();
    if (s.plain) {
      await plainSection(c.redis, `${keys.prefix}:plain:${name}`, `${i}:${counts[i]}`);
      waits.push(performance.now() - t);
      counts[i]!++;
      return;
    }
    if (s.contextApi) {
      await c.locks.withLock(name, () => void waits.push(performance.now() - t), {
        waitMs: 10_000,
        leaseMs: 10_000,
      });
      counts[i]!++;
      return;
    }
    const held = await c.locks.acquire(name, { waitMs: 10_000, leaseMs: 10_000, fair: s.fair });
    waits.push(performance.now() - t);
    if (!held) return;
    counts[i]!++;
    await held.release();
  };
  await Promise.all(
    counts.map(async (_, i) => {
      const c = clients[i % processes]!;
      while (performance.now() < until) await section(c, `L${i % s.locks}`, i);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const calls = (await commandsProcessed(probe)) - callsBefore;
  for (const c of clients) {
    await c.locks.close();
    c.pubsub.close();
    c.redis.disconnect();
    c.subscriber.disconnect();
  }
  waits.sort((a, b) => a - b);
  const sections = counts.reduce((a, b) => a + b, 0);
  return {
    scenario: s.name,
    sectionsPerSec: Math.round(sections / seconds),
    waitP50Ms: Math.round(percentile(waits, 50) * 100) / 100,
    waitP99Ms: Math.round(percentile(waits, 99) * 100) / 100,
    minPerContender: Math.min(...counts),
    maxPerContender: Math.max(...counts),
    contendersServed: counts.filter((n) => n > 0).length,
    redisCommandsPerSection: Math.round((calls / Math.max(1, sections)) * 10) / 10,
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      contenders: { type: 'string', default: '50' },
      processes: { type: 'string', default: '5' },
      'no-pipelining': { type: 'boolean', default: false },
      duration: { type: 'string', default: '3000' },
      'redis-url': { type: 'string' },
      only: { type: 'string' },
    },
  });
  const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const contenders = Number(values.contenders);
  const durationMs = Number(values.duration);
  // one name: the plain-spin names have a comma in them
  const chosen = pickScenarios(SCENARIOS, values.only === undefined ? undefined : [values.only]);
  const redis = await benchRedis(values['redis-url'], config.launcher.searchPath);
  const results: Array<Awaited<ReturnType<typeof run>>> = [];
  try {
    for (const s of chosen) {
      progress(`${s.name}: ${contenders} contenders for ${durationMs} ms`);
      results.push(
        await run(
          redis.url,
          s,
          contenders,
          Number(values.processes),
          !values['no-pipelining'],
          durationMs,
        ),
      );
    }
  } finally {
    await redis.stop();
  }
  if (values.only) {
    process.stdout.write(`${table(results)}\n${JSON.stringify({ bench: 'lock', results })}\n`);
    return;
  }
  const by = (name: string) => results.find((r) => r.scenario === name)!;
  const ratios = {
    sixteenLocksVsOne: ratio(by('16 locks').sectionsPerSec, by('1 lock').sectionsPerSec),
    oneLockVsPlain: ratio(
      by('1 lock').sectionsPerSec,
      by('plain SET NX spin, 1 lock').sectionsPerSec,
    ),
    sixteenLocksVsPlain: ratio(
      by('16 locks').sectionsPerSec,
      by('plain SET NX spin, 16 locks').sectionsPerSec,
    ),
    pubsubVsPoll: ratio(by('1 lock').sectionsPerSec, by('1 lock, poll 5 ms').sectionsPerSec),
    pollCommandsVsPubsub: ratio(
      by('1 lock, poll 5 ms').redisCommandsPerSection,
      by('1 lock').redisCommandsPerSection,
    ),
    fairMaxOverMin: ratio(
      by('1 lock, fair').maxPerContender,
      Math.max(1, by('1 lock, fair').minPerContender),
    ),
    defaultMaxOverMin: ratio(
      by('1 lock').maxPerContender,
      Math.max(1, by('1 lock').minPerContender),
    ),
    withLockVsAcquire: ratio(
      by('16 locks, withLock').sectionsPerSec,
      by('16 locks').sectionsPerSec,
    ),
  };
  process.stdout.write(
    `\nLock benchmark: ${contenders} contenders over ${values.processes} clients, ${durationMs} ms per scenario\n\n`,
  );
  process.stdout.write(`${table(results)}\n\n`);
  process.stdout.write(
    [
      `16 locks / 1 lock: ${ratios.sixteenLocksVsOne}x`,
      `vs the plain SET NX spin prototype: 1 lock ${ratios.oneLockVsPlain}x, 16 locks ${ratios.sixteenLocksVsPlain}x`,
      `pub/sub / poll: ${ratios.pubsubVsPoll}x (poll sends ${ratios.pollCommandsVsPubsub}x the commands per section)`,
      `fairness max/min per contender: fair ${ratios.fairMaxOverMin}, default ${ratios.defaultMaxOverMin}`,
      `withLock (AsyncLocalStorage) / acquire(): ${ratios.withLockVsAcquire}x`,
    ].join('\n') + '\n\n',
  );
  process.stdout.write(
    `${JSON.stringify({ bench: 'lock', contenders, processes: Number(values.processes), durationMs, machine: machine(), results, ratios })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:lock failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
