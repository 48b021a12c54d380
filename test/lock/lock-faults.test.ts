import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockLostError } from '../../src/lock/index.js';
import { commandCalls, lockClient, sleep, type TestLockClient } from '../support/locks.js';
import { startTestRedis } from '../support/servers.js';
import { waitFor } from '../support/cli.js';

// A dedicated redis-server: these tests restart it, stop it and pause it.
let server: Awaited<ReturnType<typeof startTestRedis>>;
let admin: Redis;
const clients: TestLockClient[] = [];
const client = (opts?: Parameters<typeof lockClient>[2]) => {
  const c = lockClient(server.url, 'lf', opts);
  clients.push(c);
  return c;
};
beforeAll(async () => {
  server = await startTestRedis({ persistence: 'none' });
  admin = new Redis(server.url);
  admin.on('error', () => {}); // the server is stopped on purpose below
});
// Each test closes its clients: a lost holder's renewal queued while Redis was down must not be
// flushed into the next test's command counts.
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

const evalCalls = async () =>
  (await commandCalls(admin, 'evalsha')) + (await commandCalls(admin, 'eval'));

function lostReason(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    signal.addEventListener('abort', () => resolve(signal.reason));
  });
}

describe('a holder that dies', () => {
  it('kept alive by its watchdog, the lock frees within its lease once the holder is SIGKILLed', async () => {
    const watchdogMs = 1_000;
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, '..', 'fixtures', 'lock-holder.ts'),
        server.url,
        'lf',
        'killed',
        String(watchdogMs),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
      child.once('exit', (code) => reject(new Error(`holder exited early (${code})`)));
    });
    const { locks } = client();
    // Two leases later the watchdog still keeps it.
    await sleep(2 * watchdogMs); // the scenario: two leases' time
    expect(await locks.lock('killed').isLocked()).toBe(true);

    child.kill('SIGKILL');
    // What frees it is the lease on the key, at most one watchdog period (read from Redis, not
    // timed by the test: a loaded machine polls late)
    const ttl = await locks.lock('killed').remainingTtl();
    expect(ttl).not.toBeNull();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(watchdogMs);
    for (let i = 0; await locks.lock('killed').isLocked(); i++) {
      if (i > 1_500) throw new Error('the lock outlived its lease by 30 s');
      await sleep(20);
    }
    const lease = await locks.runInContext(() => locks.lock('killed').tryLock({ leaseMs: 1_000 }));
    expect(lease).not.toBeNull();
  });
});

describe('Redis failures while a lock is held', () => {
  it("a restart that loses the lock aborts the holder's signal with LockLostError; a new holder gets it", async () => {
    const holder = client({ watchdogTimeoutMs: 1_000 });
    const { lease, reason } = await holder.locks.runInContext(async () => {
      const lease = (await holder.locks.lock('restart').tryLock())!;
      await server.restart();
      return { lease, reason: await lostReason(lease.signal) };
    });
    expect(reason).toBeInstanceOf(LockLostError);
    expect(lease.fence).toBeGreaterThan(0);
    const other = client();
    const next = await other.locks.runInContext(() =>
      other.locks.lock('restart').tryLock({ waitMs: 2_000, leaseMs: 1_000 }),
    );
    expect(next).not.toBeNull();
  });

  it('Redis unreachable for longer than the lease aborts the signal with LockLostError', async () => {
    const holder = client({ watchdogTimeoutMs: 900 });
    const reason = await holder.locks.runInContext(async () => {
      const lease = (await holder.locks.lock('unreachable').tryLock())!;
      await server.stop();
      return lostReason(lease.signal);
    });
    await server.restart();
    // (how soon it is lost is a matter of the renewal period, not asserted here: the machine is
    // shared; the test fails by its own timeout if the signal never aborts)
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as Error).message).toMatch(/did not confirm a renewal/);
  });
});

describe('waiting', () => {
  /** Holds `name` in its own context until the returned `release()` is called. */
  async function hold(c: TestLockClient, name: string) {
    let letGo!: () => void;
    const go = new Promise<void>((r) => (letGo = r));
    let held!: () => void;
    const isHeld = new Promise<void>((r) => (held = r));
    const done = c.locks.runInContext(async () => {
      await c.locks.lock(name).tryLock({ leaseMs: 10_000 });
      held();
      await go;
      await c.locks.lock(name).unlock();
    });
    await isHeld;
    return async () => {
      letGo();
      await done;
    };
  }

  /** Loads every lock script into the server's cache, so counts below have no NOSCRIPT retries. */
  async function warmUp(c: TestLockClient) {
    await (
      await hold(c, 'warm-up')
    )();
  }

  it('a waiter is woken by the unlock notice, long before the TTL fallback, with a handful of commands', async () => {
    const holder = client();
    const waiter = client();
    await warmUp(holder);
    const release = await hold(holder, 'wake');
    const evalBefore = await evalCalls();
    const subsBefore = await commandCalls(admin, 'ssubscribe');
    let acquiredAt = 0;
    const waiting = waiter.locks.runInContext(async () => {
      const lease = await waiter.locks.lock('wake').tryLock({ waitMs: 20_000, leaseMs: 5_000 });
      acquiredAt = Date.now();
      return lease;
    });
    // asleep: its first attempt, then its attempt once subscribed
    await waitFor(
      'the waiter asleep',
      async () => (await evalCalls()) - evalBefore >= 2,
      10_000,
      20,
    );
    const unlockedAt = Date.now();
    await release();
    expect(await waiting).not.toBeNull();
    // The holder's lease had 9 s left: the notice, not the TTL fallback, woke the waiter.
    expect(acquiredAt - unlockedAt).toBeLessThan(500);
    // waiter: first attempt, attempt once subscribed, attempt after the notice; holder: release.
    expect((await evalCalls()) - evalBefore).toBe(4);
    expect((await commandCalls(admin, 'ssubscribe')) - subsBefore).toBeLessThanOrEqual(1);
  });

  it('a withLock that waits behind another owner runs no re-entry check; a nested one re-enters', async () => {
    const holder = client();
    const waiter = client();
    await warmUp(holder);
    const release = await hold(holder, 'fresh-owner');
    const hexistsBefore = await commandCalls(admin, 'hexists');
    const evalBefore = await evalCalls();
    let counts: number[] = [];
    const waiting = waiter.locks.withLock(
      'fresh-owner',
      async (_signal, outer) =>
        waiter.locks.withLock(
          'fresh-owner',
          async (_s, inner) => (counts = [outer.holdCount, inner.holdCount]),
          { leaseMs: 10_000 },
        ),
      { waitMs: 20_000, leaseMs: 10_000 },
    );
    // it tried, joined the line, tried again once subscribed, and sleeps
    await waitFor(
      'the waiter asleep',
      async () => (await evalCalls()) - evalBefore >= 2,
      10_000,
      20,
    );
    await release();
    await waiting;
    expect(counts).toEqual([1, 2]);
    // (fixed leases: no watchdog renewal, whose script checks the owner with HEXISTS too) the
    // waiter's attempts before the notice found the lock held by another owner without asking
    // whether it held it: a withLock context that inherited nothing cannot; only the nested
    // withLock, whose context holds it, asked
    expect((await commandCalls(admin, 'hexists')) - hexistsBefore).toBe(1);
    expect(await waiter.locks.lock('fresh-owner').isLocked()).toBe(false);
  });

  it('an unlock wakes one waiter of a process, not all of them', async () => {
    const holder = client();
    const waiters = client();
    await warmUp(holder);
    const release = await hold(holder, 'herd');
    const evalsBefore = await evalCalls();
    let acquired = 0;
    const all = Array.from({ length: 10 }, () =>
      waiters.locks.runInContext(async () => {
        const lease = await waiters.locks.lock('herd').tryLock({ waitMs: 3_000, leaseMs: 10_000 });
        if (lease) acquired++;
      }),
    );
    // asleep: their attempts (a process sends one waiter of a lock to Redis) have stopped
    let attempts = -1;
    await waitFor(
      () => `the ten waiters asleep (${attempts} attempts)`,
      async () => {
        const now = (await evalCalls()) - evalsBefore;
        const still = now > 0 && now === attempts;
        attempts = now;
        return still;
      },
      10_000,
      100,
    );
    const before = await evalCalls();
    await release();
    await waitFor('one waiter to win', async () => acquired === 1, 10_000, 20);
    await sleep(300); // the scenario: time for a waiter woken by mistake to show
    // The release and one woken waiter's winning attempt; the nine others stayed asleep.
    expect((await evalCalls()) - before).toBe(2);
    expect(acquired).toBe(1);
    await admin.del('lf:{herd}:lock');
    await Promise.all(all);
  });

  it('an acquisition that took longer than its lease counts as failed and is released', async () => {
    const { locks } = client();
    // Writes (and scripts) wait 300 ms: the acquire lands, but after its 100 ms lease is used up.
    await admin.call('CLIENT', 'PAUSE', '300', 'WRITE');
    const lease = await locks.runInContext(() => locks.lock('slow').tryLock({ leaseMs: 100 }));
    expect(lease).toBeNull();
    expect(await locks.lock('slow').isLocked()).toBe(false);
    expect(locks.activeHolds).toBe(0);
  });
});
