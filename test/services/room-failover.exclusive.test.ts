/**
 * A waiting room through a master failover in durable mode (docs/waiting-room.md, "Durable
 * mode"): 3 masters with a replica each, the launcher supervising the nodes, REDIS_WAIT_REPLICAS=1,
 * shoppers in line and some admitted, then the master holding the room's slot (its meta, places,
 * line and served counter) killed -9. Once a replica has taken over, every shopper holds the
 * ticket they were given, nobody told "admitted" is waiting again, the served counter is not
 * behind what any process heard, and admission carries on in ticket order to the end of the line.
 */
import { randomBytes } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { guardShards } from '../../src/redis/shard-health.js';
import { ShardDownError } from '../../src/outages.js';
import { Keys } from '../../src/redis/keys.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { startTestCluster, type TestCluster } from '../support/cluster.js';
import { useNamespace } from '../support/namespace.js';
import { ROOM_FIELD } from '../../src/inventory/records/hash-fields.js';

// its waits (the takeover, the node back, the rows) add up past vitest's 60 s: a slow step
// must fail with its name, not with the test's timeout
vi.setConfig({ testTimeout: 180_000 });
const ns = useNamespace();
const keys = new Keys(ns.id);
const LINE = 40;
let cluster: TestCluster;
let app: RunningApp;
const restarts: number[] = [];

beforeAll(async () => {
  cluster = await startTestCluster({
    replicas: 1,
    supervise: { onRestart: (n) => restarts.push(n.port) },
  });
  const config = ns.config({
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    REDIS_WAIT_REPLICAS: '1',
    SALE_TOKEN_SECRET: 'a-sale-token-secret-long-enough-0123456789',
    ROOM_LEASE_MS: '1000',
    ROOM_TICK_MS: '50',
    LOG_LEVEL: process.env.DEBUG_LOG ?? 'silent',
  });
  app = await startApp(config);
}, 120_000);
afterAll(async () => {
  await app?.close();
  await cluster?.remove();
});

const ownerOf = (key: string) => cluster.ownerOfSlot(calculateSlot(key));
const role = async (port: number) =>
  ((await cluster.admin(port).call('ROLE')) as [string, ...unknown[]])[0];

/** The port of the replica of the master on `port`. */
async function replicaOf(port: number): Promise<number> {
  const [, , replicas] = (await cluster.admin(port).call('ROLE')) as [string, number, string[][]];
  return Number(replicas[0]![1]);
}

/** A product whose room's master holds neither the product list nor the list of rooms. */
async function productOffTheLists(): Promise<{ productId: string; victim: string }> {
  const lists = await Promise.all([keys.products(), keys.rooms()].map(ownerOf));
  const overdue = deadlineOf('a product off the lists', 10_000);
  for (;;) {
    overdue();
    const p = `rf${randomBytes(3).toString('hex')}`;
    const victim = await ownerOf(keys.room(p, 1).room);
    if (!lists.includes(victim)) return { productId: p, victim };
  }
}

interface Place {
  state: string;
  position: number | null;
  saleToken?: string;
}

async function queue(method: 'POST' | 'GET', productId: string, user: string): Promise<Place> {
  const place = await ask(method, productId, user, 50_000);
  if (!place)
    throw new Error(
      `timed out after 50000 ms waiting for an answer but 503 to ${method} queue for ${user}`,
    );
  return place;
}

/**
 * What a shopper is told within `patienceMs`: their place, or null when every answer was 503. In
 * durable mode a place read from Redis is answered once a replica holds it: while the replica is
 * stopped, a poll this process cannot answer from memory is refused, and its shopper told nothing.
 */
async function ask(
  method: 'POST' | 'GET',
  productId: string,
  user: string,
  patienceMs: number,
): Promise<Place | null> {
  const deadline = Date.now() + patienceMs;
  while (Date.now() < deadline) {
    const res = await fetch(`${app.url}/products/${productId}/queue`, {
      method,
      headers: { 'x-user-id': user },
      signal: AbortSignal.timeout(15_000),
    });
    // a join refused while its master fails over (503) is tried again, as a shopper would
    if (res.status === 503) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as Place;
  }
  return null;
}

/** Runs `fn` with the process `pid` stopped (SIGSTOP), resumed whatever happens. */
async function whileStopped<T>(pid: number, fn: () => Promise<T>): Promise<T> {
  process.kill(pid, 'SIGSTOP');
  try {
    return await fn();
  } finally {
    // a replica left stopped would fail the next test too
    process.kill(pid, 'SIGCONT');
  }
}

describe('a waiting room in durable mode, the master of its slot killed -9', () => {
  it("keeps every shopper's ticket and admission, and admits on in order after the failover", async () => {
    const { productId, victim } = await productOffTheLists();
    const victimPort = Number(victim.split(':')[1]);
    const res = await fetch(`${app.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        total: 1_000,
        segments: 3,
        strategy: 'lockfree',
        waitingRoom: { admitPerSecond: 4, maxActive: 1_000, admittedForSeconds: 600 },
      }),
    });
    expect(res.status).toBe(201);
    const epoch = ((await res.json()) as { epoch: number }).epoch;
    const k = keys.room(productId, epoch);
    await waitFor(
      'the opening',
      async () => (await app.rt.redis.hget(k.room, ROOM_FIELD.opened)) === '1',
      10_000,
    );
    const line = Array.from({ length: LINE }, (_, i) => `s${i}x${randomBytes(2).toString('hex')}`);
    for (const u of line) expect((await queue('POST', productId, u)).state).toBe('waiting');
    const tickets = await app.rt.redis.hgetall(k.places);
    expect(line.map((u) => Number(tickets[u]))).toEqual(line.map((_, i) => i + 1));
    await waitFor(
      'a few admitted',
      async () => Number(await app.rt.redis.hget(k.room, ROOM_FIELD.served)) >= 4,
      10_000,
    );

    // what the shoppers were told just before the crash
    const told = await Promise.all(line.map((u) => queue('GET', productId, u)));
    const admittedBefore = line.filter((_, i) => told[i]!.state === 'admitted');
    expect(admittedBefore.length).toBeGreaterThanOrEqual(4);
    const admittedAt = await app.rt.redis.hgetall(k.admitted);

    // The replica stops taking the stream (frozen, its link cut by the master), more shoppers
    // join and more are admitted meanwhile, and the master dies: what exists on the master alone
    // is lost; nothing a shopper was answered may be.
    const replicaPort = await replicaOf(victimPort);
    const replicaNode = cluster.nodes.find((n) => n.port === replicaPort)!;
    const { late, lateAnswers, toldLast, heardLast } = await whileStopped(
      replicaNode.process.pid,
      async () => {
        await cluster.admin(victimPort).call('CLIENT', 'KILL', 'TYPE', 'replica');
        const late = Array.from({ length: 5 }, (_, i) => `t${i}x${randomBytes(2).toString('hex')}`);
        // settled as they come, so a failure before they are read leaves no rejection unhandled
        const lateAnswers = Promise.allSettled(late.map((u) => queue('POST', productId, u)));
        // the scenario: the late joins stay in flight while the replica is stopped
        await new Promise((r) => setTimeout(r, 2_500));
        // a poll answered from memory is answered; one that must read Redis waits for the replica
        const toldLast = await Promise.all(line.map((u) => ask('GET', productId, u, 3_000)));
        const heardLast = (await app.rt.inventory.catalogue.get(productId))!.room!.heard.served;
        const node = cluster.nodes.find((n) => n.port === victimPort)!;
        node.process.kill();
        await node.process.exited;
        return { late, lateAnswers, toldLast, heardLast };
      },
    );
    await waitFor(
      'a replica to take over the room',
      async () => (await ownerOf(k.room)) !== victim,
      30_000,
    );
    await waitFor(
      'the dead node restarted and back as a replica',
      async () => restarts.length > 0 && (await role(victimPort)) === 'slave',
      30_000,
    );
    // the app's client learns the new master (its breaker reads the map again while the dead
    // one is marked): the reads below go through it
    const newOwner = await ownerOf(k.room);
    await waitFor(
      "the app's slot map to name the new master",
      async () => (app.rt.redis as Cluster).slots[calculateSlot(k.room)]?.[0] === newOwner,
      10_000,
    );

    // nobody's place changed; nobody admitted lost it; the counter is not behind what was heard
    const placesAfter = await app.rt.redis.hgetall(k.places);
    expect(line.map((u) => placesAfter[u])).toEqual(line.map((u) => tickets[u]));
    const after = await app.rt.redis.hgetall(k.admitted);
    for (const u of admittedBefore) expect(after[u]).toBe(admittedAt[u]);
    expect(Number(await app.rt.redis.hget(k.room, ROOM_FIELD.served))).toBeGreaterThanOrEqual(
      heardLast,
    );
    const admittedLast = line.filter((_, i) => toldLast[i]?.state === 'admitted');
    // those admitted before are answered from memory: never a vacuous check
    expect(admittedLast).toEqual(expect.arrayContaining(admittedBefore));
    for (const u of admittedLast) {
      expect(Number(after[u] ?? 0), `${u} was told admitted`).toBeGreaterThan(0);
      expect((await queue('GET', productId, u)).state).toBe('admitted');
    }
    // the late joiners were answered (after the failover, if their first try met it) and hold
    // the place they were answered
    const lateTold = (await lateAnswers).map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
    expect(lateTold.map((r) => r.state)).toEqual(late.map(() => 'waiting'));
    const lateTickets = await app.rt.redis.hgetall(k.places);
    expect(late.map((u) => Number(lateTickets[u] ?? 0)).sort((x, y) => x - y)).toEqual([
      41, 42, 43, 44, 45,
    ]);

    // admission goes on to the end of the line, in ticket order
    await waitFor(
      'every shopper admitted',
      async () => Number(await app.rt.redis.hget(k.room, ROOM_FIELD.served)) === LINE + late.length,
      60_000,
      200,
    );
    const final = await app.rt.redis.hgetall(k.admitted);
    expect(Object.keys(final).sort()).toEqual([...line, ...late].sort());
    const times = line.map((u) => Number(final[u]));
    expect(times.every((t) => t > 0)).toBe(true);
    expect(times).toEqual([...times].sort((x, y) => x - y));
    const last = await queue('GET', productId, line[LINE - 1]!);
    expect([last.state, typeof last.saleToken]).toEqual(['admitted', 'string']);
  });
});

describe("the shard breaker, a marked master's slots moved to its replica", () => {
  it('serves them once the breaker reads the new map, without the periodic refresh (issue 46)', async () => {
    // a live master and its replica; a key on that master
    let master = 0;
    for (const n of cluster.nodes) if ((await role(n.port)) === 'master') master = n.port;
    const replica = await replicaOf(master);
    let key = '';
    while (!key) {
      const k = `breaker:${randomBytes(3).toString('hex')}`;
      if ((await ownerOf(k)) === `127.0.0.1:${master}`) key = k;
    }
    // a client with the breaker alone: no periodic map read, no map read when a node is dropped
    // (connection.ts adds both), so only what the breaker does can make it learn the failover
    const client = new Cluster(cluster.masters, {
      slotsRefreshInterval: 0,
      retryDelayOnFailover: 0,
      redisOptions: { commandTimeout: 500, maxRetriesPerRequest: 1 },
    });
    client.on('error', () => {});
    guardShards(client);
    const masterNode = cluster.nodes.find((n) => n.port === master)!;
    try {
      await client.set(key, '1');
      // the master freezes: a command times out and marks it, the next are refused unsent
      process.kill(masterNode.process.pid, 'SIGSTOP');
      await expect(client.get(key)).rejects.toThrow();
      await expect(client.get(key)).rejects.toBeInstanceOf(ShardDownError);
      // its replica takes its slots over at once (no vote: the master is frozen)
      await cluster.admin(replica).call('CLUSTER', 'FAILOVER', 'TAKEOVER');
      await waitFor(
        'the replica to own the slot',
        async () => (await ownerOf(key)) === `127.0.0.1:${replica}`,
        10_000,
      );
      // the frozen master is still marked; its slots are served by the new one
      await waitFor(
        'the key served by the new master',
        async () => {
          try {
            await client.get(key);
            return true;
          } catch (err) {
            if (err instanceof ShardDownError) return false;
            throw err;
          }
        },
        10_000,
        50,
      );
    } finally {
      process.kill(masterNode.process.pid, 'SIGCONT');
      client.disconnect();
    }
  });
});
