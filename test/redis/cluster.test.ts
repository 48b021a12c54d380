/**
 * The key schema is Redis-Cluster ready: every script touches one hash slot (a segment, a lock,
 * a product), so the same protocol runs on a 3-shard cluster. These tests drive the lock and
 * inventory scripts through an ioredis Cluster client; a CROSSSLOT mistake fails them.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as catalogue from '../../src/inventory/catalogue/protocol.js';
import * as outboxScripts from '../../src/inventory/outbox/protocol.js';
import * as sale from '../../src/inventory/sale/protocol.js';
import { splitStock } from '../../src/inventory/layout.js';
import * as lock from '../../src/lock/protocol.js';
import { Keys } from '../../src/redis/keys.js';
import { startRedisServer, type RunningRedis } from '../../src/launcher/redis-server.js';
import { waitFor } from '../support/cli.js';
import { freePort } from '../support/ports.js';
import { binDirs, tempDir } from '../support/servers.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';

const nodes: RunningRedis[] = [];
let cluster: Cluster;
let redis: Redis; // the protocol gateways are typed for Redis; a Cluster takes the same calls
const keys = new Keys('cl');
const dir = tempDir('cluster');

beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    nodes.push(
      await startRedisServer({
        port: await freePort(),
        dir: join(dir.path, `n${i}`),
        binDir: binDirs().redis,
        persistence: 'none',
        extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
      }),
    );
  }
  execFileSync(join(binDirs().redis, 'redis-cli'), [
    '--cluster',
    'create',
    ...nodes.map((n) => `127.0.0.1:${n.port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  cluster = new Cluster(
    nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    { shardedSubscribers: true },
  );
  await waitFor(
    'cluster_state:ok',
    async () => (await cluster.cluster('INFO')).includes('cluster_state:ok'),
    30_000,
  );
  redis = cluster as unknown as Redis;
}, 60_000);

afterAll(async () => {
  cluster?.disconnect();
  await Promise.all(nodes.map((n) => n.stop()));
  dir.remove();
});

describe('on a 3-shard Redis Cluster', () => {
  it('refuses a script whose keys span two segments (so passing tests mean one slot each)', async () => {
    const a = keys.segment('clx', 0);
    const b = keys.segment('clx', 1);
    await expect(
      cluster.eval("return redis.call('GET', KEYS[1])", 2, a.state, b.state),
    ).rejects.toThrow(/CROSSSLOT/);
  });

  it('seeds, deducts and spills across segments that live on different shards', async () => {
    const p = 'clp';
    const segments = 8;
    const begun = await catalogue.beginSeed(
      redis,
      keys.product(p),
      {
        total: 20,
        segments,
        strategy: 'lockfree',
        startsAt: 0,
        endsAt: 0,
        limitPerUser: 1,
        payWithinSeconds: 0,
        requireSaleToken: false,
      },
      false,
    );
    expect(begun.code).toBe('begun');
    const epoch = begun.code === 'begun' ? begun.epoch : 0;
    const stocks = splitStock(20, segments);
    for (let i = 0; i < segments; i++) {
      const pipe = cluster.pipeline(); // one segment per pipeline: one slot
      catalogue.queueSeedSegment(pipe, keys.segment(p, i), {
        epoch,
        stock: stocks[i]!,
        startsAt: 0,
        endsAt: 0,
        limitPerUser: 1,
        payWithinSeconds: 0,
      });
      for (const [err] of (await pipe.exec()) ?? []) expect(err).toBeNull();
    }
    // the segments really are spread over the shards
    const slots = new Set(
      await Promise.all(
        Array.from({ length: segments }, (_, i) =>
          cluster.cluster('KEYSLOT', keys.segment(p, i).state),
        ),
      ),
    );
    const masters = cluster.nodes('master');
    expect(masters.length).toBe(3);
    const perNode = await Promise.all(masters.map((m) => m.dbsize()));
    expect(perNode.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
    expect(slots.size).toBe(segments);

    const base = { epoch, fence: 0, quantity: 1, productId: p, touchedAt: Date.now() };
    let sold = 0;
    for (let u = 0; u < 30; u++) {
      const home = u % segments;
      const r = await sale.deduct(redis, keys.segment(p, home), {
        ...base,
        mode: 'home',
        userId: `u${u}`,
        orderId: `o${u}`,
        segment: home,
        homeSegment: home,
      });
      if (r.code === 'ok') sold++;
      else expect(r.code).toBe('spill');
      if (r.code !== 'spill') continue;
      // spill: take the unit from the first segment that has one, then settle the claim
      let settled = false;
      for (let s = 0; s < segments && !settled; s++) {
        if (s === home) continue;
        const spill = await sale.deduct(redis, keys.segment(p, s), {
          ...base,
          mode: 'spill',
          userId: `u${u}`,
          orderId: `o${u}`,
          segment: s,
          homeSegment: home,
        });
        if (spill.code === 'ok') {
          sold++;
          settled = true;
          expect(
            (
              await outboxScripts.claimSettle(
                redis,
                keys.segment(p, home),
                `u${u}`,
                `o${u}`,
                'finalise',
              )
            ).code,
          ).toBe('settled');
        }
      }
      if (!settled) {
        expect(
          (
            await outboxScripts.claimSettle(
              redis,
              keys.segment(p, home),
              `u${u}`,
              `o${u}`,
              'release',
            )
          ).code,
        ).toBe('settled');
      }
    }
    expect(sold).toBe(20);
    let outbox = 0;
    let left = 0;
    for (let i = 0; i < segments; i++) {
      outbox += await cluster.xlen(keys.segment(p, i).outbox);
      left += Number(await cluster.hget(keys.segment(p, i).state, STATE_FIELD.stock));
    }
    expect({ outbox, left }).toEqual({ outbox: 20, left: 0 });
    expect(await catalogue.markSoldOut(redis, keys.product(p), epoch)).toBe(true);
  });

  it('runs the lock protocol, fencing and the unlock notice inside one slot per lock', async () => {
    const names = Array.from({ length: 6 }, (_, i) => `lock${i}`);
    for (const name of names) {
      const k = keys.lock(name);
      const a = await lock.acquire(redis, k, 'procA:1', 5_000);
      expect(a.code).toBe('acquired');
      // a waiter from another process joins the line; the release publishes its notice (SPUBLISH
      // from Lua, to a channel in the lock's slot)
      const notices: string[] = [];
      const sub = cluster.duplicate();
      await sub.ssubscribe(`${k.channel}procB`);
      sub.on('smessage', (_ch: string, m: string) => notices.push(m));
      const busy = await lock.acquire(redis, k, 'procB:7', 5_000, 5_000);
      expect(busy.code).toBe('busy');
      const released = await lock.release(redis, k, 'procA:1', 'procA');
      expect(released).toEqual({ code: 'released', woken: 'procB:7' });
      await waitFor('the unlock notice', async () => notices.includes('procB:7'), 5_000, 20);
      const b = await lock.acquire(redis, k, 'procB:7', 5_000);
      expect(b.code === 'acquired' && a.code === 'acquired' && b.fence > a.fence).toBe(true);
      sub.disconnect();
    }
  });
});
