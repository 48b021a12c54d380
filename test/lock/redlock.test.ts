import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedLock } from '../../src/lock/index.js';
import * as protocol from '../../src/lock/protocol.js';
import { Keys } from '../../src/redis/keys.js';
import { startTestRedis } from '../support/servers.js';

// Three independent redis-servers, as RedLock requires (not replicas of one another).
const servers: Array<Awaited<ReturnType<typeof startTestRedis>>> = [];
const conns: Redis[] = [];
const keys = new Keys('rl');
beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    const s = await startTestRedis();
    servers.push(s);
    const c = new Redis(s.url);
    c.on('error', () => {}); // servers are stopped on purpose below
    conns.push(c);
  }
});
afterAll(async () => {
  for (const c of conns) c.disconnect();
  for (const s of servers) await s.stop();
});

/** Another client holds `name` on the given servers. */
async function preLock(name: string, on: number[]) {
  for (const i of on) {
    expect((await protocol.acquire(conns[i]!, keys.lock(name), 'intruder:1', 30_000)).code).toBe(
      'acquired',
    );
  }
}

describe('RedLock over 3 real redis-servers', () => {
  it('succeeds when only a minority is held by someone else, with validity below the lease', async () => {
    await preLock('minority', [0]);
    const redlock = new RedLock({ servers: conns, keys });
    const lease = await redlock.acquire('minority', { leaseMs: 2_000 });
    expect(lease).not.toBeNull();
    expect(lease!.granted).toBe(2);
    expect(lease!.fences[0]).toBeUndefined();
    expect(lease!.validityMs).toBeGreaterThan(0);
    // validity = lease - elapsed - drift, drift = 0.01 * lease + 2 ms
    expect(lease!.validityMs).toBeLessThanOrEqual(2_000 - 22);
    for (const i of [1, 2])
      expect(await conns[i]!.hget(keys.lock('minority').lock, lease!.owner)).toBe('1');
    await redlock.release(lease!);
    for (const i of [1, 2]) expect(await conns[i]!.exists(keys.lock('minority').lock)).toBe(0);
    // The intruder's lock is untouched by our release.
    expect(await conns[0]!.hget(keys.lock('minority').lock, 'intruder:1')).toBe('1');
  });

  it('fails when a majority is held, and leaves nothing of its own behind', async () => {
    await preLock('majority', [0, 1]);
    const redlock = new RedLock({ servers: conns, keys, retryDelayMs: 20 });
    const lease = await redlock.acquire('majority', { leaseMs: 2_000, waitMs: 200 });
    expect(lease).toBeNull();
    const k = keys.lock('majority').lock;
    expect(await conns[2]!.exists(k)).toBe(0);
    for (const i of [0, 1]) expect(await conns[i]!.hgetall(k)).toEqual({ 'intruder:1': '1' });
  });

  it('fails when a majority is unreachable, then works again once the servers are back', async () => {
    await servers[1]!.stop();
    await servers[2]!.stop();
    const redlock = new RedLock({ servers: conns, keys, retryDelayMs: 20, serverTimeoutMs: 50 });
    expect(await redlock.acquire('down', { leaseMs: 1_000 })).toBeNull();
    expect(await conns[0]!.exists(keys.lock('down').lock)).toBe(0);
    await servers[1]!.restart();
    await servers[2]!.restart();
    const lease = await redlock.acquire('down', { leaseMs: 1_000, waitMs: 3_000 });
    expect(lease).not.toBeNull();
    expect(lease!.granted).toBeGreaterThanOrEqual(redlock.quorum);
  });
});
