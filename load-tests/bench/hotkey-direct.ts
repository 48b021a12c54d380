/**
 * The Redis-bound half of `npm run bench:hotkey`: the sale's deduct with its free lock
 * (lua/deductFree-11.lua, the call a locked segment's purchase sends) driven straight at one
 * redis-server pinned to one core, with no API tier. The driver is redis-benchmark (C, a few µs
 * of client CPU a call, pinned to the other core): 16 of them, each on one segment's keys (or all
 * on the one segment), a new shopper and order id on every call (`__rand_int__`). One segment
 * against 16 on the same server: what one master can sell, measured rather than assumed. Redis's
 * CPU and the calls are read from INFO over a window in the middle of the load.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Db } from '../../src/db/index.js';
import { seedProduct } from '../../src/inventory/index.js';
import { DEDUCT_REPLY } from '../../src/inventory/sale/deduct-reply.js';
import { deductArgs, deductKeys } from '../../src/inventory/sale/protocol.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { touchActive } from '../../src/inventory/catalogue/active-set.js';
import { createRedis, type Redis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { renderScript } from '../../src/redis/scripts.js';
import { benchRedis } from './redis.js';
import { progress } from './report.js';

export interface DirectRow {
  segments: number;
  'deducts/s': number;
  'Redis us/deduct': number;
  /** Redis CPU over the window / wall time: near 1, the pinned core was the limit */
  'Redis core busy': number;
  /** calls that sold nothing (a random shopper id drawn twice meets the limit of 1) */
  'not sold': number;
}

/** redis-benchmark processes per run, each its own segment (or all on the one segment). */
const DRIVERS = 16;

async function info(redis: Redis): Promise<{ cpu: number; calls: number }> {
  const text = `${await redis.info('cpu')}\n${await redis.info('commandstats')}`;
  const f = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    cpu: f(/^used_cpu_user:([\d.]+)/m) + f(/^used_cpu_sys:([\d.]+)/m),
    calls: f(/^cmdstat_evalsha:calls=(\d+)/m),
  };
}

/** Runs `cmd` pinned to `cpu` when taskset is there (false: it is not). */
function pinned(cpu: number, cmd: string, args: string[]): { proc: ChildProcess; pinned: boolean } {
  try {
    execFileSync('taskset', ['-c', String(cpu), 'true'], { stdio: 'ignore' });
    return {
      proc: spawn('taskset', ['-c', String(cpu), cmd, ...args], { stdio: 'ignore' }),
      pinned: true,
    };
  } catch {
    return { proc: spawn(cmd, args, { stdio: 'ignore' }), pinned: false };
  }
}

export interface DirectOptions {
  db: Db;
  /** seconds measured per window (after a second of warm-up) */
  seconds: number;
  rounds: number;
  segmentCounts: number[];
}

export async function redisBound(
  o: DirectOptions,
): Promise<{ rows: DirectRow[]; pinned: boolean; violations: string[] }> {
  const server = await benchRedis(undefined, process.env.PATH ?? '');
  let isPinned = false;
  try {
    execFileSync('taskset', ['-a', '-cp', '1', String(server.pid)], { stdio: 'ignore' });
    isPinned = true;
  } catch {
    // no taskset: measured unpinned, and said so
  }
  progress(`Redis-bound: redis-server ${isPinned ? 'pinned to CPU 1' : 'NOT pinned'}`);
  const port = new URL(server.url).port;
  const keys = new Keys(`hk${Date.now().toString(36)}`.slice(0, 16));
  const redis = createRedis(server.url, { name: 'hotkey-direct' });
  const lua = renderScript('deductFree', DEDUCT_REPLY);
  const sha = createHash('sha1').update(lua).digest('hex');
  const totals = new Map<number, { cpu: number; calls: number; s: number }>();
  const violations: string[] = [];
  const sold = async (productId: string, n: number) => {
    let units = 0;
    for (let i = 0; i < n; i++)
      units += Number(await redis.hget(keys.segment(productId, i).state, STATE_FIELD.sold));
    return units;
  };
  /** every call of each product's drivers, warm-up and tail included */
  const callsOf = new Map<number, number>();
  const notSold = new Map<number, number>();
  try {
    if ((await redis.script('LOAD', lua)) !== sha) throw new Error('deductFree: unexpected SHA');
    const epochs = new Map<number, number>();
    for (const n of o.segmentCounts) {
      const seeded = await seedProduct({ redis, keys, db: o.db }, `direct-${n}`, {
        total: 1_000_000_000,
        segments: n,
        strategy: n === 1 ? 'global' : 'segmented',
      });
      epochs.set(n, seeded.epoch);
    }
    for (let round = 1; round <= o.rounds; round++) {
      for (const n of o.segmentCounts) {
        progress(`Redis-bound round ${round}/${o.rounds}: ${n} segment(s) for ${o.seconds} s`);
        const productId = `direct-${n}`;
        const touchedAt = await touchActive({ redis, keys }, productId);
        const before = (await info(redis)).calls;
        const drivers = Array.from({ length: DRIVERS }, (_, d) => {
          const seg = d % n;
          const args = {
            mode: 'home' as const,
            epoch: epochs.get(n)!,
            fence: 0,
            userId: 'u__rand_int__',
            quantity: 1,
            orderId: 'o__rand_int__',
            productId,
            segment: seg,
            homeSegment: seg,
            touchedAt,
          };
          const segment = keys.segment(productId, seg);
          const k = [...deductKeys(segment, args), segment.lock.lock, segment.lock.fence];
          k.push(segment.lock.queue, segment.lock.handoff);
          const command = ['EVALSHA', sha, String(k.length), ...k, ...deductArgs(args).map(String)];
          const benchArgs = ['-p', port, '-c', '4', '-P', '8', '-n', '1000000000', '-r'];
          return pinned(0, 'redis-benchmark', [...benchArgs, '1000000000', '-q', ...command]);
        });
        try {
          await new Promise((r) => setTimeout(r, 1_000));
          const [a, t0] = [await info(redis), Date.now()];
          await new Promise((r) => setTimeout(r, o.seconds * 1000));
          const [b, t1] = [await info(redis), Date.now()];
          const t = totals.get(n) ?? { cpu: 0, calls: 0, s: 0 };
          totals.set(n, {
            cpu: t.cpu + b.cpu - a.cpu,
            calls: t.calls + b.calls - a.calls,
            s: t.s + (t1 - t0) / 1000,
          });
        } finally {
          for (const d of drivers) d.proc.kill('SIGINT');
          await Promise.all(drivers.map((d) => new Promise((r) => d.proc.once('exit', r))));
        }
        callsOf.set(n, (callsOf.get(n) ?? 0) + (await info(redis)).calls - before);
      }
    }
    for (const n of o.segmentCounts) {
      const missing = callsOf.get(n)! - (await sold(`direct-${n}`, n));
      notSold.set(n, missing);
      // a call sells one unit or nothing: more units than calls would be an oversell
      if (missing < 0) violations.push(`${n} segment(s): ${-missing} units sold beyond the calls`);
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  const rows = o.segmentCounts.map((n): DirectRow => {
    const t = totals.get(n)!;
    return {
      segments: n,
      'deducts/s': Math.round(t.calls / t.s),
      'Redis us/deduct': Math.round((t.cpu * 1e7) / Math.max(1, t.calls)) / 10,
      'Redis core busy': Math.round((t.cpu / t.s) * 100) / 100,
      'not sold': notSold.get(n) ?? 0,
    };
  });
  return { rows, pinned: isPinned, violations };
}
