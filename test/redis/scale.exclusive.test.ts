/**
 * The product on a real local Redis Cluster (3 masters, formed by the launcher's code): the
 * cluster the launcher forms and reuses, a command never resent after its connection died, a
 * shard that goes away mid-sale and comes back, and the slots of a live sale moved to another
 * master while shoppers buy. Exact counts throughout, and no 5xx for well-formed requests
 * except the 503s that say "this shard, try again".
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { homeSegment } from '../../src/inventory/layout.js';
import { createInventory } from '../../src/inventory/index.js';
import { assertPortFree } from '../../src/launcher/process.js';
import { startRedisCluster } from '../../src/launcher/redis-cluster.js';
import { createCluster } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { moveSlot, startTestCluster, type TestCluster } from '../support/cluster.js';
import { useNamespace } from '../support/namespace.js';
import { reconcileOver, stackProcess, type StackProcess, waitForRows } from '../support/orders.js';
import { replyLosingProxy } from '../support/proxy.js';
import { binDirs, tempDir } from '../support/servers.js';
import { orderSold } from '../support/sale.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
let cluster: TestCluster;
let app: RunningApp;
let worker: StackProcess;

beforeAll(async () => {
  cluster = await startTestCluster();
  const config = ns.config({
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    LOCK_WAIT_MS: '1000',
    REDIS_COMMAND_TIMEOUT_MS: '1000',
    SWEEP_INTERVAL_MS: '300',
    SWEEP_MIN_AGE_MS: '500',
    LOG_LEVEL: process.env.DEBUG_LOG ?? 'silent',
  });
  app = await startApp(config);
  worker = await stackProcess(config, { worker: true });
}, 120_000);
/** A node a failed test killed and did not bring back (the later tests need every master). */
let killed: { restart(): Promise<void> } | undefined;
afterEach(async () => {
  await killed?.restart();
  killed = undefined;
});
afterAll(async () => {
  await app?.close();
  await worker?.close();
  await cluster?.remove();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };

async function seed(productId: string, body: Record<string, unknown>) {
  const res = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(201);
}

interface Answer {
  user: string;
  status: number;
  type: string;
  retryAfter: string | null;
}

async function buy(productId: string, user: string): Promise<Answer> {
  const res = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user },
    body: JSON.stringify({ productId }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { type?: string };
  return {
    user,
    status: res.status,
    type: body.type ?? '',
    retryAfter: res.headers.get('retry-after'),
  };
}

/** Buys for each user, `parallel` requests in flight at a time; `out` fills as answers come. */
async function buyAll(
  productId: string,
  users: string[],
  parallel = 16,
  out: Answer[] = [],
): Promise<Answer[]> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < users.length) out.push(await buy(productId, users[next++]!));
    }),
  );
  return out;
}

const users = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const count = (answers: Answer[], status: number) =>
  answers.filter((a) => a.status === status).length;

/** The 5xx answers (but those of an allowed type), short enough to read in a failure. */
const errors = (answers: Answer[], allowed: string[] = []) =>
  answers
    .filter((a) => a.status >= 500 && !allowed.some((t) => a.type.endsWith(t)))
    .map((a) => `${a.user} ${a.status} ${a.type}`);

/** Stock and units sold of the `segments` a master holds, read on that master. */
async function segmentsOn(node: Redis, productId: string, segments: Set<number>) {
  const held: Array<{ segment: number; stock?: string | null; sold?: string | null }> = [];
  for (const segment of segments) {
    const [stock, sold] = await node.hmget(
      keys.segment(productId, segment).state,
      STATE_FIELD.stock,
      STATE_FIELD.sold,
    );
    held.push({ segment, stock, sold });
  }
  return held;
}

/** The master ("127.0.0.1:port") that serves `key` now. */
const ownerOf = (key: string) => cluster.ownerOfSlot(calculateSlot(key));
const portOf = (node: string) => Number(node.split(':')[1]);

describe('the local cluster the launcher forms', () => {
  it('works from any base port (bus ports set explicitly), and a restart reuses it with its data', async () => {
    // a base port above 55535: the default bus port (port + 10000) would not exist
    let base = 0;
    for (let tries = 0; tries < 50 && !base; tries++) {
      const b = 60_000 + Math.floor(Math.random() * 5_000);
      const free = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          assertPortFree(b + i).then(
            () => true,
            () => false,
          ),
        ),
      );
      if (free.every(Boolean)) base = b;
    }
    expect(base).toBeGreaterThan(55_535);
    const dir = tempDir('high');
    const start = () =>
      startRedisCluster({
        basePort: base,
        shards: 3,
        replicas: 0,
        dir: join(dir.path, 'c'),
        binDir: binDirs().redis,
      });
    try {
      let c = await start();
      const r = new Redis(base);
      const nodes = (await r.cluster('NODES')) as string;
      for (let i = 0; i < 3; i++) expect(nodes).toContain(`127.0.0.1:${base + i}@${base + 3 + i}`);
      const id = await r.call('CLUSTER', 'MYID');
      const writer = createCluster([{ host: '127.0.0.1', port: base }], { name: 'test' });
      await writer.set('{x}kept', 'yes');
      writer.disconnect();
      r.disconnect();
      await c.stop();
      c = await start();
      const again = createCluster([{ host: '127.0.0.1', port: base }], { name: 'test' });
      expect(await again.get('{x}kept')).toBe('yes');
      const r2 = new Redis(base);
      expect(await r2.call('CLUSTER', 'MYID')).toBe(id);
      r2.disconnect();
      again.disconnect();
      await c.stop();
    } finally {
      dir.remove();
    }
  });
});

describe('a command is never sent twice', () => {
  it('a deduct whose reply was lost with its connection is not resent by the cluster client', async () => {
    const productId = `nr${randomBytes(3).toString('hex')}`;
    await seed(productId, { total: 5, segments: 1, strategy: 'lockfree', limitPerUser: 5 });
    const seg = keys.segment(productId, 0);
    const owner = await ownerOf(seg.state);
    const proxy = await replyLosingProxy(portOf(owner));
    // the cluster announces the owner's real address; this client reaches it through the proxy
    const redis = createCluster(cluster.masters, {
      name: 'test-no-resend',
      natMap: { [owner]: { host: '127.0.0.1', port: proxy.port } },
    });
    const subscriber = createCluster(cluster.masters, { name: 'test-sub', role: 'subscriber' });
    const inv = createInventory({
      redis,
      subscriber,
      keys,
      lock: { waitMs: 200, leaseMs: 2_000, queueMs: 1_000 },
    });
    try {
      await orderSold(inv.sale.purchase({ productId, userId: 'warm', quantity: 1 })); // scripts loaded
      proxy.loseReplyTo((chunk) => /evalsha/i.test(chunk) && chunk.includes('lost'), {
        thenClose: true,
      });
      await expect(
        orderSold(inv.sale.purchase({ productId, userId: 'lost', quantity: 1 })),
      ).rejects.toThrow(/Connection is closed/);
      expect(proxy.lost).toBe(1);
      // the scenario: time for a resend to land, if one were made
      await new Promise((r) => setTimeout(r, 1_000));
      const direct = cluster.admin(portOf(owner));
      expect(await direct.hget(seg.state, STATE_FIELD.stock)).toBe('3'); // warm + lost: sold once each
      expect(await direct.hget(seg.state, STATE_FIELD.sold)).toBe('2'); // (the worker empties the outbox)
      // and the client recovers: the next purchase sells normally
      await orderSold(inv.sale.purchase({ productId, userId: 'after', quantity: 1 }));
      expect(await direct.hget(seg.state, STATE_FIELD.stock)).toBe('2');
    } finally {
      await inv.close();
      redis.disconnect();
      subscriber.disconnect();
      await proxy.close();
    }
  });
});

describe('a shard goes away mid-sale', () => {
  it('its shoppers get 503 + Retry-After, the other shards sell all they hold, and after it returns the sale ends exact and reconciled', async () => {
    const segments = 6;
    // A product whose meta, order queue and product list live off the victim: the victim holds
    // some of its segments only (what a dead shard cannot take away is what this test is about).
    let productId = '';
    let victim = '';
    for (let i = 0; !victim; i++) {
      const p = `sd${i}${randomBytes(2).toString('hex')}`;
      const owners = await Promise.all(
        Array.from({ length: segments }, (_, s) => ownerOf(keys.segment(p, s).state)),
      );
      const off = [keys.product(p).meta, `{${ns.id}q}`, keys.products()];
      const offOwners = await Promise.all(off.map(ownerOf));
      const v = owners.find((o) => !offOwners.includes(o));
      if (!v) continue;
      productId = p;
      victim = v;
    }
    const victimNode = cluster.nodes.find((n) => n.port === portOf(victim))!;
    await seed(productId, { total: 60, segments, strategy: 'segmented', limitPerUser: 1 });
    const onVictim = new Set<number>();
    for (let s = 0; s < segments; s++) {
      if ((await ownerOf(keys.segment(productId, s).state)) === victim) onVictim.add(s);
    }

    const before = await buyAll(productId, users('a', 24));
    expect(count(before, 202)).toBe(24);
    const state = (await (
      await fetch(`${app.url}/admin/products/${productId}`, { headers: admin })
    ).json()) as { segments: Array<{ segment: number; stock: number; shard: string }> };
    expect(new Set(state.segments.map((s) => s.shard)).size).toBe(3);
    const liveStock = state.segments
      .filter((s) => !onVictim.has(s.segment))
      .reduce((a, s) => a + s.stock, 0);

    // The shard crashes (SIGKILL) having first written every sale it acknowledged to its AOF.
    // Under appendfsync everysec Redis holds the AOF write back (up to 2 s) while a background fsync
    // is still running, a busy disk, and answers commands meanwhile: a SIGKILL then takes sales it
    // acknowledged with it, the restart puts their units on sale again (a loaded full-suite run sold
    // 62 of 60 here). That is a lost write, what reconciliation names after a failover
    // (test/redis/failover.exclusive.test.ts); this test is about a shard that comes back with its data.
    // Under appendfsync always CONFIG SET is answered only once the held writes are on disk.
    const victimAdmin = cluster.admin(portOf(victim));
    await victimAdmin.config('SET', 'appendfsync', 'always');
    const victimHeld = await segmentsOn(victimAdmin, productId, onVictim);
    victimNode.process.kill();
    await victimNode.process.exited;
    killed = victimNode; // brought back after the test, should it fail before it does
    const during = await buyAll(productId, users('b', 150), 8);
    expect(errors(during, ['shard-unavailable', 'store-unavailable'])).toEqual([]);
    for (const a of during.filter((x) => x.status === 503)) expect(a.retryAfter).toBe('1');
    // every unit the live shards held is sold; none of the dead shard's
    expect(count(during, 202)).toBe(liveStock);
    for (const a of during) {
      const home = homeSegment(a.user, segments);
      if (onVictim.has(home)) expect(a.status, a.user).toBe(503);
    }
    const refusedAtHome = during.filter(
      (a) =>
        a.type === 'urn:seckill:problem:shard-unavailable' &&
        onVictim.has(homeSegment(a.user, segments)),
    );
    expect(refusedAtHome.length).toBeGreaterThan(0);

    await victimNode.restart();
    killed = undefined;
    // back with every sale it acknowledged (nothing sold on it since: it was down)
    const victimBack = await waitFor(
      'the returned shard to load its data',
      () => segmentsOn(victimAdmin, productId, onVictim),
      30_000,
    );
    expect(victimBack).toEqual(victimHeld);
    await waitFor(
      'the returned shard to serve',
      async () => (await buy(productId, 'probe-after-return')).status === 202,
      30_000,
    );
    const after = await buyAll(productId, users('c', 200));
    expect(errors(after)).toEqual([]);
    const sold = count(before, 202) + count(during, 202) + 1 + count(after, 202);
    expect(sold).toBe(60);
    expect(after.filter((a) => a.status === 409).every((a) => a.type.endsWith('sold-out'))).toBe(
      true,
    );
    await waitForRows(worker.rt.db, productId, 60);
    const report = await reconcileOver(
      { redis: worker.rt.redis, keys, db: worker.rt.db },
      productId,
    );
    expect(report).toMatchObject({ ok: true, remaining: 0, persisted: 60, persistedOrders: 60 });
  });
});

describe('resharding under load', () => {
  for (const strategy of ['lockfree', 'segmented'] as const) {
    it(`${strategy}: the slots of a live sale's segments move to another master while 480 shoppers buy 240 units: exactly 240 sold, no 5xx`, async () => {
      const productId = `rs${strategy[0]}${randomBytes(3).toString('hex')}`;
      const segments = 12;
      await seed(productId, { total: 240, segments, strategy, limitPerUser: 1 });
      await buyAll(productId, ['warm']); // scripts loaded, views cached
      // every segment of this sale on the first master moves to the second
      const [from, to] = [cluster.masters[0]!.port, cluster.masters[1]!.port];
      const moving: number[] = [];
      for (let s = 0; s < segments; s++) {
        const key = keys.segment(productId, s).state;
        if (portOf(await ownerOf(key)) === from) moving.push(calculateSlot(key));
      }
      expect(moving.length).toBeGreaterThan(0);
      const answered: Answer[] = [];
      // 8 at a time: the race outlasts the slot moves (about 1 s here; at 24 at a time the whole
      // race once finished first in a fresh-clone CI run)
      const race = buyAll(productId, users(`r${strategy}`, 480), 8, answered);
      await waitFor('the race to start', async () => answered.length >= 8, 10_000, 5);
      const atStart = answered.length;
      for (const slot of moving) await moveSlot(cluster, slot, from, to);
      const atEnd = answered.length;
      const answers = await race;
      // the move happened while shoppers were buying, not before or after the race
      expect(atEnd).toBeGreaterThan(atStart);
      expect(atEnd).toBeLessThan(480);
      for (const slot of moving) expect(portOf(await cluster.ownerOfSlot(slot))).toBe(to);
      expect(errors(answers)).toEqual([]);
      expect(count(answers, 202) + 1).toBe(240);
      expect(count(answers, 409)).toBe(480 - 239);
      await waitForRows(worker.rt.db, productId, 240);
      const report = await reconcileOver(
        { redis: worker.rt.redis, keys, db: worker.rt.db },
        productId,
      );
      expect(report).toMatchObject({ ok: true, remaining: 0, persistedOrders: 240 });
    });
  }
});
