/**
 * The drop's controls in durable mode (REDIS_WAIT_REPLICAS=1), on 3 masters with a replica each:
 * a control is answered 200 only once the replicas hold what it wrote, so a failover cannot take
 * an acknowledged pause back. With the replica of the product's meta frozen (its link cut), a
 * pause answers 503 store-unavailable: its change stands on the masters and every process heard
 * it (purchases are refused), but it is not safe yet. Once the replica is back, the same pause
 * answers 200 and the replica holds it.
 */
import { randomBytes } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { META_FIELD } from '../../src/inventory/records/hash-fields.js';
import { Keys } from '../../src/redis/keys.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { startTestCluster, type TestCluster } from '../support/cluster.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
let cluster: TestCluster;
let app: RunningApp;
let frozen: number | undefined;

beforeAll(async () => {
  cluster = await startTestCluster({ replicas: 1 });
  app = await startApp(
    ns.config({
      REDIS_CLUSTER_NODES: cluster.nodesEnv,
      REDIS_WAIT_REPLICAS: '1',
      LOG_LEVEL: process.env.DEBUG_LOG ?? 'silent',
    }),
  );
}, 120_000);
afterAll(async () => {
  if (frozen) process.kill(frozen, 'SIGCONT');
  await app?.close();
  await cluster?.remove();
});

const admin = {
  authorization: `Bearer ${ns.adminToken}`,
  'content-type': 'application/json',
  'x-operator': 'durable-test',
};

async function replicaOf(port: number): Promise<number> {
  const [, , replicas] = (await cluster.admin(port).call('ROLE')) as [string, number, string[][]];
  return Number(replicas[0]![1]);
}

async function pause(productId: string) {
  const res = await fetch(`${app.url}/admin/products/${productId}/pause`, {
    method: 'POST',
    headers: admin,
  });
  return { status: res.status, body: (await res.json()) as { type?: string; changed?: boolean } };
}

it('answers a pause 200 only once the replicas hold it; 503 while they cannot, the pause standing', async () => {
  const productId = `dur${randomBytes(3).toString('hex')}`;
  const seeded = await fetch(`${app.url}/admin/products/${productId}`, {
    method: 'PUT',
    headers: admin,
    body: JSON.stringify({ total: 10, segments: 3, strategy: 'segmented' }),
  });
  expect(seeded.status).toBe(201);
  const metaKey = keys.product(productId).meta;
  const master = Number((await cluster.ownerOfSlot(calculateSlot(metaKey))).split(':')[1]);
  const replicaPort = await replicaOf(master);
  const replica = cluster.nodes.find((n) => n.port === replicaPort)!;

  // the replica stops taking the stream
  frozen = replica.process.pid;
  process.kill(frozen, 'SIGSTOP');
  await cluster.admin(master).call('CLIENT', 'KILL', 'TYPE', 'replica');
  const unsafe = await pause(productId);
  expect(unsafe.status).toBe(503);
  expect(unsafe.body.type).toBe('urn:seckill:problem:store-unavailable');
  // it stands on the master, and the process heard it
  expect(await cluster.admin(master).hget(metaKey, META_FIELD.paused)).toBe('1');
  const refused = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': 'd1' },
    body: JSON.stringify({ productId }),
  });
  expect(refused.status).toBe(503);
  expect(((await refused.json()) as { type: string }).type).toBe('urn:seckill:problem:sale-paused');

  process.kill(frozen, 'SIGCONT');
  frozen = undefined;
  const again = await waitFor(
    'the replica back and the pause confirmed',
    async () => {
      const r = await pause(productId);
      return r.status === 200 && r;
    },
    60_000,
    500,
  );
  expect(again.body.changed).toBe(false);
  const onReplica = cluster.admin(replicaPort);
  await onReplica.call('READONLY');
  expect(await onReplica.hget(metaKey, META_FIELD.paused)).toBe('1');
}, 120_000);
