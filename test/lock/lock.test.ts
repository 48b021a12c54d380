import { afterAll, describe, expect, it } from 'vitest';
import {
  LockContextError,
  LockLostError,
  LockNotHeldError,
  LockTimeoutError,
} from '../../src/lock/index.js';
import * as protocol from '../../src/lock/protocol.js';
import { Keys } from '../../src/redis/keys.js';
import { barrier, lockClient, sleep, type TestLockClient } from '../support/locks.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const clients: TestLockClient[] = [];
const client = (opts?: Parameters<typeof lockClient>[2]) => {
  const c = lockClient(ns.redisTarget, ns.id, opts);
  clients.push(c);
  return c;
};
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});
let seq = 0;
const lockName = (what: string) => `${what}-${++seq}`;

/**
 * 10 contenders x 5 rounds of get -> sleep 20 ms -> set +1 on a plain Redis counter.
 * Returns the final counter, how often a contender found another inside, and the most
 * contenders that were trying to get in at the same moment.
 */
async function counterRace(guard: 'lock' | 'none') {
  const name = lockName('counter');
  const counterKey = `${ns.id}:counter:${name}`;
  const contenders = Array.from({ length: 10 }, () => client());
  const start = barrier(contenders.length);
  let inside = 0;
  let overlaps = 0;
  let trying = 0;
  let maxTrying = 0;
  await Promise.all(
    contenders.map(async ({ locks, redis }) => {
      await start();
      for (let round = 0; round < 5; round++) {
        const section = async () => {
          if (inside > 0) overlaps++;
          inside++;
          const v = Number((await redis.get(counterKey)) ?? 0);
          // the scenario: a window between the read and the write
          await sleep(20);
          await redis.set(counterKey, String(v + 1));
          inside--;
        };
        trying++;
        maxTrying = Math.max(maxTrying, trying);
        if (guard === 'none') {
          trying--;
          await section();
        } else {
          await locks.withLock(name, async () => {
            trying--;
            await section();
          });
        }
      }
    }),
  );
  return { counter: Number(await contenders[0]!.redis.get(counterKey)), overlaps, maxTrying };
}

describe('mutual exclusion', () => {
  it('without a lock, the same read-sleep-write race loses updates (the test can fail)', async () => {
    const r = await counterRace('none');
    expect(r.counter).toBeLessThan(50);
    expect(r.overlaps).toBeGreaterThan(0);
  });

  it('10 contenders on separate connections x 5 rounds end at exactly 50, never overlapping', async () => {
    const r = await counterRace('lock');
    expect(r.counter).toBe(50);
    expect(r.overlaps).toBe(0);
    // They really contended: most of them were waiting for the lock at the same time.
    expect(r.maxTrying).toBeGreaterThanOrEqual(8);
  });
});

describe('ownership', () => {
  it("follows an expired lease's timeline: A's lease expires, B acquires, A's late unlock fails, B is intact", async () => {
    const { locks, redis } = client();
    const name = lockName('timeline');
    const keys = new Keys(ns.id).lock(name);
    const a = locks.lock(name);
    const b = locks.lock(name);
    let leaseA: Awaited<ReturnType<typeof a.tryLock>> = null;
    await locks.runInContext(async () => {
      // 1 s, not 150 ms: an acquisition whose round trip outlasts its lease is given back (the lease
      // would be dead on arrival), and a loaded machine once took longer than 150 ms
      leaseA = await a.tryLock({ leaseMs: 1_000 });
      expect(leaseA).not.toBeNull();
      // the scenario: A's lease runs out
      await sleep(1_300);
      const lostReason = await new Promise<unknown>((resolve) => {
        if (leaseA!.signal.aborted) resolve(leaseA!.signal.reason);
        leaseA!.signal.addEventListener('abort', () => resolve(leaseA!.signal.reason));
      });
      expect(lostReason).toBeInstanceOf(LockLostError);

      const leaseB = await locks.runInContext(() => b.tryLock({ leaseMs: 5_000 }));
      expect(leaseB).not.toBeNull();
      expect(leaseB!.fence).toBeGreaterThan(leaseA!.fence);
      // A is back from its "pause" and unlocks: refused, and B's lock is intact.
      await expect(a.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
      expect(await a.isLocked()).toBe(true);
      expect(await redis.hget(keys.lock, leaseB!.owner)).toBe('1');
    });
  });

  it('refuses an unlock by a context that does not hold the lock, and leaves the lock alone', async () => {
    const { locks, redis } = client();
    const name = lockName('non-owner');
    const lock = locks.lock(name);
    await locks.runInContext(async () => {
      expect(await lock.tryLock({ leaseMs: 5_000 })).not.toBeNull();
      // Another context of the same process is another owner.
      await locks.runInContext(async () => {
        await expect(lock.unlock()).rejects.toThrow(LockNotHeldError);
      });
    });
    // A forged owner id is refused by the script itself.
    const keys = new Keys(ns.id).lock(name);
    expect(await protocol.release(redis, keys, 'someone-else:1', 'x')).toEqual({
      code: 'not-held',
    });
    expect(await lock.isLocked()).toBe(true);
    expect(Object.keys(await redis.hgetall(keys.lock))).toHaveLength(1);
  });

  it('is reentrant: lock 3x, unlock 2x -> count 1, still held, and another owner cannot get it', async () => {
    const { locks } = client();
    const other = client();
    const name = lockName('reentrant');
    const lock = locks.lock(name);
    await locks.runInContext(async () => {
      const first = await lock.tryLock({ leaseMs: 5_000 });
      const second = await lock.tryLock({ leaseMs: 5_000 });
      const third = await lock.tryLock({ leaseMs: 5_000 });
      expect([first!.holdCount, second!.holdCount, third!.holdCount]).toEqual([1, 2, 3]);
      expect(new Set([first!.fence, second!.fence, third!.fence]).size).toBe(1);
      await lock.unlock();
      await lock.unlock();
      expect(await lock.holdCount()).toBe(1);
      expect(await lock.isHeldByCurrentContext()).toBe(true);
      expect(await lock.isLocked()).toBe(true);
      await other.locks.runInContext(async () => {
        expect(await other.locks.lock(name).tryLock({ waitMs: 100 })).toBeNull();
      });
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
      await expect(lock.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    });
  });

  it('treats a nested withLock on the same lock as reentry, not a deadlock', async () => {
    const { locks } = client();
    const name = lockName('nested');
    const counts = await locks.withLock(name, async () =>
      locks.withLock(name, async () => [await locks.lock(name).holdCount()], { waitMs: 100 }),
    );
    expect(counts).toEqual([2]);
    expect(await locks.lock(name).isLocked()).toBe(false);
  });

  it('counts the holds of nested withLock calls on one lock: same owner and fence, released one by one', async () => {
    const { locks } = client();
    const other = client();
    const name = lockName('nested-counts');
    const lock = locks.lock(name);
    const outer = await locks.withLock(
      name,
      async (_signal, lease) => {
        expect(lease.holdCount).toBe(1);
        expect(await lock.holdCount()).toBe(1);
        const inner = await locks.withLock(
          name,
          async (_s, innerLease) => {
            expect(innerLease.holdCount).toBe(2);
            expect(await lock.holdCount()).toBe(2);
            // a third level re-enters too
            await locks.withLock(name, async () => expect(await lock.holdCount()).toBe(3));
            expect(await lock.holdCount()).toBe(2);
            return innerLease;
          },
          { waitMs: 100 },
        );
        expect(inner.owner).toBe(lease.owner);
        expect(inner.fence).toBe(lease.fence);
        // one hold is left: still held, and another owner cannot have it
        expect(await lock.holdCount()).toBe(1);
        expect(await lock.isLocked()).toBe(true);
        expect(
          await other.locks.withLock(name, () => 'got it', { waitMs: 100 }).catch((e) => e),
        ).toBeInstanceOf(LockTimeoutError);
        return lease;
      },
      { leaseMs: 5_000 },
    );
    expect(outer.holdCount).toBe(1);
    expect(await lock.isLocked()).toBe(false);
    expect(locks.activeHolds).toBe(0);
  });

  it('re-enters from withLock a lock its caller took with tryLock, and leaves the caller its hold', async () => {
    const { locks } = client();
    const name = lockName('tryLock-then-withLock');
    const lock = locks.lock(name);
    await locks.runInContext(async () => {
      const first = (await lock.tryLock({ leaseMs: 5_000 }))!;
      const inner = await locks.withLock(name, (_s, lease) => lease, { waitMs: 100 });
      expect(inner.holdCount).toBe(2);
      expect(inner.owner).toBe(first.owner);
      expect(inner.fence).toBe(first.fence);
      expect(await lock.holdCount()).toBe(1);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
    });
  });

  it("a withLock nested in another lock's takes its own lock as a new owner and releases both", async () => {
    const { locks } = client();
    const a = lockName('outer-a');
    const b = lockName('inner-b');
    await locks.withLock(a, async (_s, leaseA) => {
      await locks.withLock(b, async (_s2, leaseB) => {
        expect(leaseB.owner).not.toBe(leaseA.owner);
        expect(leaseB.holdCount).toBe(1);
        expect(await locks.lock(a).holdCount()).toBe(1);
        expect(await locks.lock(b).holdCount()).toBe(1);
      });
      expect(await locks.lock(b).isLocked()).toBe(false);
      expect(await locks.lock(a).holdCount()).toBe(1);
    });
    expect(await locks.lock(a).isLocked()).toBe(false);
    expect(locks.activeHolds).toBe(0);
  });

  it("aborts withLock's signal with LockLostError when the lock is lost, and rejects with LockNotHeldError", async () => {
    const { locks } = client({ watchdogTimeoutMs: 600 });
    const admin = client();
    const name = lockName('withLock-lost');
    let reason: unknown;
    const outcome = await locks
      .withLock(name, async (signal) => {
        expect(signal.aborted).toBe(false);
        expect(await admin.locks.lock(name).forceUnlock()).toBe(true);
        // learnt at the watchdog's next renewal (a third of 600 ms)
        reason = await new Promise<unknown>((resolve) => {
          if (signal.aborted) resolve(signal.reason);
          signal.addEventListener('abort', () => resolve(signal.reason));
        });
        return 'finished';
      })
      .catch((e: unknown) => e);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(outcome).toBeInstanceOf(LockNotHeldError);
    expect(locks.activeHolds).toBe(0);
  });

  it('gives concurrent withLock calls of one process different owners', async () => {
    const { locks } = client();
    const name = lockName('siblings');
    let inside = 0;
    let overlap = false;
    await Promise.all(
      Array.from({ length: 5 }, () =>
        locks.withLock(name, async () => {
          overlap ||= inside > 0;
          inside++;
          // the scenario: a stay inside, for another to overlap it if it could
          await sleep(15);
          inside--;
        }),
      ),
    );
    expect(overlap).toBe(false);
  });

  it('needs a lock context for lock()/unlock(), and says how to get one', async () => {
    const { locks } = client();
    await expect(locks.lock(lockName('ctx')).tryLock()).rejects.toBeInstanceOf(LockContextError);
    await expect(locks.lock(lockName('ctx')).unlock()).rejects.toThrow(/runInContext/);
  });

  it('withLock gives up with LockTimeoutError when the wait runs out', async () => {
    const holder = client();
    const { locks } = client();
    const name = lockName('timeout');
    await holder.locks.runInContext(async () => {
      await holder.locks.lock(name).tryLock({ leaseMs: 5_000 });
      const started = Date.now();
      await expect(locks.withLock(name, () => 1, { waitMs: 150 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      await holder.locks.lock(name).unlock();
    });
  });

  it('reports remaining TTL and supports an admin forceUnlock that the holder learns about', async () => {
    // a lease long enough that a loaded machine's stall does not end it before the admin does
    const holder = client({ watchdogTimeoutMs: 3_000 });
    const admin = client();
    const name = lockName('force');
    const lost = await holder.locks.runInContext(async () => {
      const lease = await holder.locks.lock(name).tryLock();
      const ttl = await admin.locks.lock(name).remainingTtl();
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3_000);
      expect(await admin.locks.lock(name).forceUnlock()).toBe(true);
      expect(await admin.locks.lock(name).remainingTtl()).toBeNull();
      // The holder is in another process: it learns at its next renewal (within a third of 3 s).
      return new Promise<unknown>((resolve) =>
        lease!.signal.addEventListener('abort', () => resolve(lease!.signal.reason)),
      );
    });
    expect(lost).toBeInstanceOf(LockLostError);
    expect(await admin.locks.lock(name).forceUnlock()).toBe(false);
  });
});

describe('fencing tokens', () => {
  it('strictly increase across holders, including after a lease expiry and a forced unlock', async () => {
    const { locks } = client();
    const name = lockName('fence');
    const fences: number[] = [];
    for (let i = 0; i < 3; i++) {
      await locks.runInContext(async () => {
        fences.push((await locks.lock(name).tryLock({ leaseMs: 5_000 }))!.fence);
        await locks.lock(name).unlock();
      });
    }
    await locks.runInContext(async () => {
      fences.push((await locks.lock(name).tryLock({ leaseMs: 80 }))!.fence);
    });
    // the scenario: the lease runs out, never unlocked
    await sleep(150);
    await locks.runInContext(async () => {
      fences.push((await locks.lock(name).tryLock({ leaseMs: 5_000 }))!.fence);
    });
    await locks.lock(name).forceUnlock();
    await locks.runInContext(async () => {
      fences.push((await locks.lock(name).tryLock({ leaseMs: 5_000 }))!.fence);
      await locks.lock(name).unlock();
    });
    expect(fences).toHaveLength(6);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
  });
});

describe('watchdog', () => {
  it('keeps a lock through a 5 s section with a 1 s timeout, and stops renewing after unlock', async () => {
    let renewals = 0;
    const { locks } = client({
      watchdogTimeoutMs: 1_000,
      metrics: { acquired() {}, contended() {}, lost() {}, renewed: () => renewals++ },
    });
    const other = client();
    const name = lockName('watchdog');
    let stolen = 0;
    await locks.withLock(name, async (signal) => {
      for (let t = 0; t < 10; t++) {
        // the scenario: a hold across ten of the watchdog's renewals
        await sleep(500);
        const ttl = await other.locks.lock(name).remainingTtl();
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(1_000);
        if (
          await other.locks.runInContext(() => other.locks.lock(name).tryLock({ leaseMs: 1_000 }))
        )
          stolen++;
      }
      expect(signal.aborted).toBe(false);
    });
    expect(stolen).toBe(0);
    // 5 s at one renewal per 333 ms.
    expect(renewals).toBeGreaterThanOrEqual(12);
    expect(await other.locks.lock(name).isLocked()).toBe(false);
    expect(locks.activeHolds).toBe(0);
    const after = renewals;
    // the scenario: time for a renewal that must not come
    await sleep(800);
    expect(renewals).toBe(after);
  });
});

describe('fair mode', () => {
  it('serves contenders first come, first served, so work is shared evenly', async () => {
    const name = lockName('fair');
    const contenders = Array.from({ length: 10 }, () => client());
    const start = barrier(contenders.length);
    const done = new Array<number>(contenders.length).fill(0);
    const until = Date.now() + 1_500;
    await Promise.all(
      contenders.map(async ({ locks }, i) => {
        await start();
        while (Date.now() < until) {
          await locks.withLock(
            name,
            async () => {
              done[i]!++;
              await sleep(2);
            },
            { fair: true, leaseMs: 2_000 },
          );
        }
      }),
    );
    const min = Math.min(...done);
    const max = Math.max(...done);
    expect(min).toBeGreaterThan(0);
    expect(max / min).toBeLessThanOrEqual(2);
  });

  it('does not let a crashed waiter block the line for longer than its place lasts', async () => {
    const c = client({ placeMs: 400 });
    const name = lockName('fair-crash');
    const keys = new Keys(ns.id).lock(name);
    await c.locks.runInContext(async () => {
      await c.locks.lock(name, { fair: true }).tryLock({ leaseMs: 5_000 });
      // A waiter queues behind us, then its process dies: it never retries or cancels.
      const queued = await protocol.acquireFair(c.redis, keys, 'dead-process:1', 5_000, 400);
      expect(queued.code).toBe('busy');
      expect(await c.redis.zrange(keys.queue, '0', '-1')).toEqual(['dead-process:1']);
      await c.locks.lock(name, { fair: true }).unlock();
    });
    const lease = await c.locks.runInContext(() =>
      c.locks.lock(name, { fair: true }).tryLock({ waitMs: 3_000, leaseMs: 1_000 }),
    );
    // the dead waiter's place expired and was skipped (its 400 ms, not the 5 s lease of a holder):
    // the lock was had, and the line is empty
    expect(lease).not.toBeNull();
    expect(await c.redis.zcard(keys.queue)).toBe(0);
  });
});

describe('the line after hand-offs (protocol)', () => {
  for (const fair of [false, true]) {
    it(`${fair ? 'fair' : 'default'} mode: a woken waiter that takes the lock is out of the line, the others stay in order`, async () => {
      const c = client();
      const k = new Keys(ns.id).lock(lockName(fair ? 'line-fair' : 'line-default'));
      const attempt = (owner: string, inLine = false) =>
        fair
          ? protocol.acquireFair(c.redis, k, owner, 5_000, 1, inLine)
          : protocol.acquire(c.redis, k, owner, 5_000, 1, inLine);
      expect((await attempt('pa:1')).code).toBe('acquired');
      const busy = await attempt('pb:1');
      // the busy reply carries the holder's remaining lease
      expect(busy.code).toBe('busy');
      expect(busy.code === 'busy' && busy.waitMs).toBeGreaterThan(4_000);
      expect(busy.code === 'busy' && busy.waitMs).toBeLessThanOrEqual(5_000);
      expect((await attempt('pc:1')).code).toBe('busy');
      expect(await c.redis.zrange(k.queue, '0', '-1')).toEqual(['pb:1', 'pc:1']);

      expect(await protocol.release(c.redis, k, 'pa:1', 'pa')).toEqual({
        code: 'released',
        woken: 'pb:1',
      });
      expect((await attempt('pb:1', true)).code).toBe('acquired');
      expect(await c.redis.zrange(k.queue, '0', '-1')).toEqual(['pc:1']);
      expect(await c.redis.exists(k.handoff)).toBe(0);

      expect(await protocol.release(c.redis, k, 'pb:1', 'pb')).toEqual({
        code: 'released',
        woken: 'pc:1',
      });
      // the releaser cannot barge in before the woken waiter
      expect((await attempt('pb:2')).code).toBe('busy');
      expect((await attempt('pc:1', true)).code).toBe('acquired');
      expect(await c.redis.zrange(k.queue, '0', '-1')).toEqual(['pb:2']);
      expect(Object.keys(await c.redis.hgetall(k.lock))).toEqual(['pc:1']);
    });
  }

  it('a waiter still in line that takes a free, unreserved lock leaves the line', async () => {
    const c = client();
    const k = new Keys(ns.id).lock(lockName('line-lapsed'));
    expect((await protocol.acquire(c.redis, k, 'pa:1', 5_000, 1)).code).toBe('acquired');
    expect((await protocol.acquire(c.redis, k, 'pb:1', 5_000, 1)).code).toBe('busy');
    expect((await protocol.acquire(c.redis, k, 'pc:1', 5_000, 1)).code).toBe('busy');
    // pb is woken with a 30 ms reservation it never uses
    const released = await protocol.release(c.redis, k, 'pa:1', 'pa', 30);
    expect(released).toEqual({ code: 'released', woken: 'pb:1' });
    await sleep(80); // the scenario: the reservation's 30 ms run out unused
    expect(await c.redis.exists(k.handoff)).toBe(0);
    // pc, never woken, finds the lock free and unreserved: it takes it and leaves the line
    expect((await protocol.acquire(c.redis, k, 'pc:1', 5_000, 1, true)).code).toBe('acquired');
    expect(await c.redis.zcard(k.queue)).toBe(0);
  });
});

describe('acquire() handles', () => {
  it('release once: a second release rejects and leaves the next holder alone; releaseAfter too', async () => {
    const a = client();
    const b = client();
    const name = lockName('handle');
    const k = new Keys(ns.id).lock(name);
    const first = (await a.locks.acquire(name, { leaseMs: 5_000 }))!;
    expect(first.name).toBe(name);
    expect(first.holdCount).toBe(1);
    expect(await protocol.holdCount(a.redis, k, first.owner)).toBe(1);
    await first.release();
    const second = (await b.locks.acquire(name, { leaseMs: 5_000 }))!;
    expect(second.fence).toBeGreaterThan(first.fence);
    await expect(first.release()).rejects.toThrow(/released already/);
    await expect(first.releaseAfter(() => a.redis.ping())).rejects.toThrow(/released already/);
    expect(await protocol.holdCount(b.redis, k, second.owner)).toBe(1);
    expect(await protocol.holdCount(b.redis, k, first.owner)).toBe(0);
    expect(await second.releaseAfter(() => b.redis.ping())).toEqual({
      result: 'PONG',
      released: 'released',
    });
    await expect(second.release()).rejects.toThrow(/released already/);
    expect(await protocol.isLocked(b.redis, k)).toBe(false);
    expect(a.locks.activeHolds + b.locks.activeHolds).toBe(0);
  });

  it("a single attempt that finds the lock held is told the holder's lease left (when to look again)", async () => {
    const a = client();
    const b = client();
    const name = lockName('busy');
    const held = (await a.locks.acquire(name, { leaseMs: 5_000 }))!;
    const told: number[] = [];
    expect(await b.locks.acquire(name, { waitMs: 0, onBusy: (ms) => told.push(ms) })).toBeNull();
    expect(told).toHaveLength(1);
    expect(told[0]).toBeGreaterThan(0);
    expect(told[0]).toBeLessThanOrEqual(5_000);
    await held.release();
    const got = await b.locks.acquire(name, { waitMs: 0, onBusy: (ms) => told.push(ms) });
    expect(told).toHaveLength(1);
    await got!.release();
  });
});

describe('script cache', () => {
  it('a flushed script cache (restart, failover) costs a resend, not a failed lock call', async () => {
    const c = client();
    const name = lockName('noscript');
    const k = new Keys(ns.id).lock(name);
    const first = (await c.locks.acquire(name, { leaseMs: 5_000 }))!;
    const masters = 'nodes' in c.redis ? c.redis.nodes('master') : [c.redis];
    await Promise.all(masters.map((m) => m.script('FLUSH')));
    await first.release();
    expect(await protocol.isLocked(c.redis, k)).toBe(false);
    await Promise.all(masters.map((m) => m.script('FLUSH')));
    const second = (await c.locks.acquire(name, { leaseMs: 5_000 }))!;
    expect(second.fence).toBe(first.fence + 1);
    expect(await protocol.holdCount(c.redis, k, second.owner)).toBe(1);
    await second.release();
  });
});

describe('re-entry check', () => {
  for (const fair of [false, true]) {
    it(`${fair ? 'fair' : 'default'} mode: only an owner that may hold the lock re-enters it`, async () => {
      const c = client();
      const k = new Keys(ns.id).lock(lockName(fair ? 'reenter-fair' : 'reenter'));
      const attempt = (owner: string, mayReenter: boolean) =>
        fair
          ? protocol.acquireFair(c.redis, k, owner, 5_000, 0, false, 200, mayReenter)
          : protocol.acquire(c.redis, k, owner, 5_000, 0, false, mayReenter);
      const first = await attempt('pa:1', true);
      expect(first.code).toBe('acquired');
      // a context owner (may hold it) re-enters, with the same fence
      const again = await attempt('pa:1', true);
      expect(again).toEqual({
        code: 'reentered',
        fence: first.code === 'acquired' ? first.fence : -1,
        count: 2,
      });
      // a fresh handle's owner is told busy and changes nothing
      expect((await attempt('pb:1', false)).code).toBe('busy');
      expect(await c.redis.hgetall(k.lock)).toEqual({ 'pa:1': '2' });
    });
  }
});
