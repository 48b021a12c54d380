/**
 * Throwaway Redis Clusters for the scale tests, formed by the launcher's own code, and the slot
 * moves a reshard is made of (CLUSTER SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT NODE).
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
  startRedisCluster,
  type NodeSupervision,
  type RunningCluster,
} from '../../src/launcher/redis-cluster.js';
import { freePortRange } from './ports.js';
import { binDirs, tempDir } from './servers.js';
import { deadlineOf } from './cli.js';

export interface TestCluster extends RunningCluster {
  /** REDIS_CLUSTER_NODES for a config */
  nodesEnv: string;
  /** an admin connection to the node on `port` (closed with the cluster) */
  admin(port: number): Redis;
  /** the node ("127.0.0.1:port") whose master serves `slot`, asked of a live node */
  ownerOfSlot(slot: number): Promise<string>;
  remove(): Promise<void>;
}

export async function startTestCluster(
  o: {
    shards?: number;
    replicas?: number;
    persistence?: 'aof' | 'none';
    /** restart nodes that die, as `seckill up` does */
    supervise?: NodeSupervision;
  } = {},
): Promise<TestCluster> {
  const shards = o.shards ?? 3;
  const replicas = o.replicas ?? 0;
  const dir = tempDir('cluster');
  const cluster = await startRedisCluster({
    basePort: await freePortRange(2 * shards * (1 + replicas)),
    shards,
    replicas,
    dir: join(dir.path, 'nodes'),
    binDir: binDirs().redis,
    persistence: o.persistence ?? 'aof',
    extraArgs: ['--enable-debug-command', 'local'],
    ...(o.supervise && { supervise: o.supervise }),
  });
  const admins = new Map<number, Redis>();
  const admin = (port: number) => {
    let a = admins.get(port);
    if (!a) {
      a = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1, lazyConnect: true });
      a.on('error', () => {}); // a node killed on purpose
      admins.set(port, a);
    }
    return a;
  };
  return {
    ...cluster,
    nodesEnv: cluster.masters.map((m) => `${m.host}:${m.port}`).join(','),
    admin,
    async ownerOfSlot(slot) {
      for (const n of cluster.nodes) {
        try {
          const slots = (await admin(n.port).cluster('SLOTS')) as unknown as Array<
            [number, number, [string, number]]
          >;
          const range = slots.find(([from, to]) => slot >= from && slot <= to);
          if (range) return `${range[2][0]}:${range[2][1]}`;
        } catch {
          // that node is down: ask the next
        }
      }
      throw new Error(`no live node knows slot ${slot}`);
    },
    async remove() {
      for (const a of admins.values()) a.disconnect();
      await cluster.stop();
      dir.remove();
    },
  };
}

/**
 * Moves `slot` from the master on `fromPort` to the one on `toPort` while clients use it: the
 * target imports, the source migrates, keys move in batches (clients meanwhile get ASK or
 * TRYAGAIN), then every master learns the new owner.
 */
export async function moveSlot(c: TestCluster, slot: number, fromPort: number, toPort: number) {
  const from = c.admin(fromPort);
  const to = c.admin(toPort);
  const fromId = (await from.call('CLUSTER', 'MYID')) as string;
  const toId = (await to.call('CLUSTER', 'MYID')) as string;
  await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId);
  await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId);
  const overdue = deadlineOf(`slot ${slot} emptied`, 50_000);
  for (;;) {
    overdue();
    const keys = (await from.call('CLUSTER', 'GETKEYSINSLOT', slot, 50)) as string[];
    if (keys.length === 0) break;
    await from.call('MIGRATE', '127.0.0.1', toPort, '', 0, 5_000, 'KEYS', ...keys);
  }
  await to.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
  await from.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
  for (const m of c.masters) {
    if (m.port !== fromPort && m.port !== toPort) {
      await c
        .admin(m.port)
        .call('CLUSTER', 'SETSLOT', slot, 'NODE', toId)
        .catch(() => {});
    }
  }
}
