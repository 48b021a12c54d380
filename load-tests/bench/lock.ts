/**
 * `npm run bench:lock`: the lock under contention, every variant in one run on one Redis.
 *   - 1 lock vs 16 locks, 50 contenders (default mode, pub/sub wake-up)
 *   - pub/sub wake-up vs plain retry (poll every 5 ms), 1 lock
 *   - fair vs default, 1 lock
 *   - 16 locks in fair mode, and 16 locks through withLock (the context API)
 *   - 16 locks with one contender each (no hand-off), against the plain prototype likewise
 * The contenders are spread over --processes LockClients (default 5), each with its own command
 * connection and subscriber, as 5 API processes with 10 requests in flight each would be. A
 * section is acquire -> release with no work inside, so the figures are the lock's own cost: per
 * section, the commands the clients sent (round trips), the commands Redis ran inside scripts,
 * Redis CPU (INFO) and the clients' CPU (process.cpuUsage). Prints a table, the ratios with their
 * targets, then one JSON line.
 *
 * Every scenario runs in --rounds slices (default 3) taken in turn, so the load of a shared machine
 * falls on all of them alike; a row sums its slices.
 *
 * Options: --contenders 50 --processes 5 --duration 3000 (ms per scenario) --pipelining (ioredis
 * auto-pipelining; the API does not use it) --only "<scenario>" --redis-url <url> (else a
 * throwaway redis-server is started).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/index.js';
import { LockClient } from '../../src/lock/index.js';
import { createRedis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';
import { benchRedis } from './redis.js';
import { machine, percentile, pickScenarios, progress, ratio, saveRun, table } from './report.js';

interface Scenario {
  name: string;
  locks: number;
  fair: boolean;
  wakeup: 'pubsub' | 'poll';
  /** withLock (lock contexts, AsyncLocalStorage) instead of acquire()/release() */
  contextApi?: boolean;
  /** The plain prototype: SET NX PX, compare-and-delete, retry at once (a spin) when taken. */
  plain?: boolean;
  /** Contenders of this row (default --contenders): one per lock shows the uncontended cost. */
  contenders?: number;
}

// The context-API row runs last in each round. Node 24 (the version this project requires) runs
// AsyncLocalStorage on AsyncContextFrame, without promise hooks, so the rounds may interleave; on
// Node 20 its hooks would stay on for the whole process and slow the later rounds (--rounds 1).
const SCENARIOS: Scenario[] = [
  { name: 'plain SET NX spin, 1 lock', locks: 1, fair: false, wakeup: 'poll', plain: true },
  { name: 'plain SET NX spin, 16 locks', locks: 16, fair: false, wakeup: 'poll', plain: true },
  { name: '1 lock', locks: 1, fair: false, wakeup: 'pubsub' },
  { name: '16 locks', locks: 16, fair: false, wakeup: 'pubsub' },
  { name: '1 lock, poll 5 ms', locks: 1, fair: false, wakeup: 'poll' },
  { name: '1 lock, fair', locks: 1, fair: true, wakeup: 'pubsub' },
  { name: '16 locks, fair', locks: 16, fair: true, wakeup: 'pubsub' },
  // one contender per lock: no hand-off, the bare acquire + release against SET NX + compare-and-delete
  {
    name: 'plain SET NX, 16 locks uncontended',
    locks: 16,
    fair: false,
    wakeup: 'poll',
    plain: true,
    contenders: 16,
  },
  { name: '16 locks uncontended', locks: 16, fair: false, wakeup: 'pubsub', contenders: 16 },
  { name: '16 locks, withLock', locks: 16, fair: false, wakeup: 'pubsub', contextApi: true },
];

/** Redis's own counters: every command it ran (scripts' inner ones too) and its CPU seconds. */
async function serverCounters(redis: Redis): Promise<{ commands: number; cpuS: number }> {
  const info = await redis.info();
  const num = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return {
    commands: num('total_commands_processed'),
    cpuS: num('used_cpu_user') + num('used_cpu_sys'),
  };
}

/** Counts the commands a connection sends (its round trips; a pipelined one counts too). */
function countSent(redis: Redis): { readonly n: number } {
  const counter = { n: 0 };
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...a: Parameters<Redis['sendCommand']>) => {
    counter.n++;
    return send(...a);
  }) as Redis['sendCommand'];
  return counter;
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
    return { redis, subscriber, pubsub, locks, sent: countSent(redis) };
  });
  await Promise.all(clients.flatMap((c) => [c.redis.ping(), c.subscriber.ping()]));
  const counts = new Array<number>(contenders).fill(0);
  const waits: number[] = [];
  const probe = createRedis(url, { name: 'bench-probe' });
  const sentBefore = clients.reduce((a, c) => a + c.sent.n, 0);
  const serverBefore = await serverCounters(probe);
  const cpuBefore = process.cpuUsage();
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
  const cpu = process.cpuUsage(cpuBefore);
  const serverAfter = await serverCounters(probe);
  const sent = clients.reduce((a, c) => a + c.sent.n, 0) - sentBefore;
  // the probe's own INFO is one command
  const commands = serverAfter.commands - serverBefore.commands - 1;
  probe.disconnect();
  for (const c of clients) {
    await c.locks.close();
    c.pubsub.close();
    c.redis.disconnect();
    c.subscriber.disconnect();
  }
  return {
    seconds,
    counts,
    waits,
    sent,
    commands,
    redisCpuUs: serverAfter.cpuS * 1e6 - serverBefore.cpuS * 1e6,
    clientCpuUs: cpu.user + cpu.system,
  };
}

type Slice = Awaited<ReturnType<typeof run>>;

/** One scenario's row from its slices (every round's): totals over the summed time. */
function summarize(name: string, slices: Slice[]) {
  const sum = (f: (x: Slice) => number) => slices.reduce((a, x) => a + f(x), 0);
  const counts = slices[0]!.counts.map((_, i) => sum((x) => x.counts[i]!));
  const waits = slices.flatMap((x) => x.waits).sort((a, b) => a - b);
  const sections = Math.max(
    1,
    counts.reduce((a, b) => a + b, 0),
  );
  const per = (x: number, digits = 1) => Math.round((x / sections) * 10 ** digits) / 10 ** digits;
  return {
    scenario: name,
    sectionsPerSec: Math.round(sections / sum((x) => x.seconds)),
    waitP50Ms: Math.round(percentile(waits, 50) * 100) / 100,
    waitP99Ms: Math.round(percentile(waits, 99) * 100) / 100,
    minPerContender: Math.min(...counts),
    maxPerContender: Math.max(...counts),
    /** commands the clients sent per section (scripts, SETs...): the round trips */
    roundTripsPerSection: per(
      sum((x) => x.sent),
      2,
    ),
    /** commands Redis ran inside those scripts, per section */
    innerCommandsPerSection: per(sum((x) => x.commands - x.sent)),
    redisCpuUsPerSection: per(sum((x) => x.redisCpuUs)),
    clientCpuUsPerSection: per(sum((x) => x.clientCpuUs)),
  };
}

async function main() {
  const { values } = parseArgs({
    options: {
      contenders: { type: 'string', default: '50' },
      processes: { type: 'string', default: '5' },
      pipelining: { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'update-report': { type: 'boolean', default: false },
      duration: { type: 'string', default: '3000' },
      'redis-url': { type: 'string' },
      rounds: { type: 'string', default: '3' },
      only: { type: 'string' },
    },
  });
  const config = loadConfig(process.env, { AUTH_MODE: 'dev' });
  const contenders = Number(values.contenders);
  const durationMs = Number(values.duration);
  // one name: the plain-spin names have a comma in them
  const chosen = pickScenarios(SCENARIOS, values.only === undefined ? undefined : [values.only]);
  const redis = await benchRedis(values['redis-url'], config.launcher.searchPath);
  // The machine's load changes under a run: every scenario gets a slice of each round, in turn,
  // so a burst of someone else's work lands on all of them alike, not on one row.
  const rounds = Math.max(1, Number(values.rounds));
  const slices = chosen.map(() => [] as Slice[]);
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const [i, s] of chosen.entries()) {
        const n = s.contenders ?? contenders;
        progress(
          `round ${round}/${rounds}, ${s.name}: ${n} contenders for ${durationMs / rounds} ms`,
        );
        slices[i]!.push(
          await run(
            redis.url,
            s,
            n,
            Number(values.processes),
            values.pipelining,
            durationMs / rounds,
          ),
        );
      }
    }
  } finally {
    await redis.stop();
  }
  const results = chosen.map((s, i) => summarize(s.name, slices[i]!));
  if (values.only) {
    process.stdout.write(`${table(results)}\n${JSON.stringify({ bench: 'lock', results })}\n`);
    return;
  }
  const by = (name: string) => results.find((r) => r.scenario === name)!;
  const oneLock = by('1 lock');
  const ratios = {
    oneLockRoundTripsPerSection: oneLock.roundTripsPerSection,
    sixteenLocksVsOne: ratio(by('16 locks').sectionsPerSec, oneLock.sectionsPerSec),
    oneLockVsPlain: ratio(oneLock.sectionsPerSec, by('plain SET NX spin, 1 lock').sectionsPerSec),
    sixteenLocksVsPlain: ratio(
      by('16 locks').sectionsPerSec,
      by('plain SET NX spin, 16 locks').sectionsPerSec,
    ),
    pubsubVsPoll: ratio(oneLock.sectionsPerSec, by('1 lock, poll 5 ms').sectionsPerSec),
    fairMaxOverMin: ratio(
      by('1 lock, fair').maxPerContender,
      Math.max(1, by('1 lock, fair').minPerContender),
    ),
    defaultMaxOverMin: ratio(oneLock.maxPerContender, Math.max(1, oneLock.minPerContender)),
    withLockVsAcquire: ratio(
      by('16 locks, withLock').sectionsPerSec,
      by('16 locks').sectionsPerSec,
    ),
    uncontendedVsPlain: ratio(
      by('16 locks uncontended').sectionsPerSec,
      by('plain SET NX, 16 locks uncontended').sectionsPerSec,
    ),
  };
  const targets: Record<keyof typeof ratios, string> = {
    oneLockRoundTripsPerSection: '<= 3',
    sixteenLocksVsOne: '>= 5',
    oneLockVsPlain: '',
    sixteenLocksVsPlain: '>= 1.0',
    pubsubVsPoll: '>= 1.0',
    fairMaxOverMin: 'near 1',
    defaultMaxOverMin: '<= 10',
    withLockVsAcquire: '>= 0.9',
    uncontendedVsPlain: '',
  };
  const json = JSON.stringify({
    bench: 'lock',
    contenders,
    processes: Number(values.processes),
    durationMs,
    rounds,
    pipelining: values.pipelining,
    machine: machine(),
    results,
    ratios,
  });
  const text = [
    `Lock benchmark: ${contenders} contenders over ${values.processes} clients, ${durationMs} ms per scenario ` +
      `in ${rounds} interleaved slices` +
      `${values.pipelining ? ', auto-pipelining on' : ''}`,
    '',
    table(results),
    '',
    table(
      Object.entries(ratios).map(([name, value]) => ({
        ratio: name,
        value,
        target: targets[name as keyof typeof ratios],
      })),
    ),
    '',
    json,
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (!values['no-write']) saveRun('lock', text, values['update-report']);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:lock failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
