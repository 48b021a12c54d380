/**
 * Blast radius of a paused master (3 masters, no replica, so it stays the owner of its slots):
 * once a command on it has timed out, a command for its slots is refused unsent, so a purchase
 * whose home segment is there is answered 503 shard-unavailable at once, and the client address's
 * bucket there fails open, so purchases whose own keys (home segment, the shopper's bucket and
 * Idempotency-Key record beside it) are on the live masters go on selling while it is paused,
 * keyed ones too. It serves
 * again once a probe finds it answering.
 */
import { randomBytes } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeSegment } from '../../src/inventory/layout.js';
import { Keys } from '../../src/redis/keys.js';
import { startApp, type RunningApp } from '../support/app.js';
import { deadlineOf, waitFor } from '../support/cli.js';
import { startTestCluster, type TestCluster } from '../support/cluster.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const SEGMENTS = 6;
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster({ replicas: 0 });
}, 120_000);
afterAll(async () => {
  await cluster?.remove();
});

const portOf = (node: string) => Number(node.split(':')[1]);
const ownerOf = (key: string) => cluster.ownerOfSlot(calculateSlot(key));

/** A key prefix whose shared keys (catalogue, product list, order queue...) are off one master. */
async function layoutOffVictim() {
  const overdue = deadlineOf('a key prefix off one master', 10_000);
  for (;;) {
    overdue();
    const prefix = `${ns.id}${randomBytes(2).toString('hex')}`;
    const keys = new Keys(prefix);
    const productId = `pause${randomBytes(3).toString('hex')}`;
    const shared = [
      keys.product(productId).meta,
      keys.products(),
      keys.active(),
      keys.catalogue(),
      keys.dataMigrations(),
      `{${prefix}q}`,
    ];
    const owners = new Set(await Promise.all(shared.map(ownerOf)));
    const victim = cluster.masters.find((m) => !owners.has(`${m.host}:${m.port}`));
    if (victim) return { prefix, keys, productId, victim: victim.port };
  }
}

async function buy(app: RunningApp, productId: string, user: string, ip: string, key?: string) {
  const res = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': user,
      'x-forwarded-for': ip,
      ...(key && { 'idempotency-key': key }),
    },
    body: JSON.stringify({ productId }),
    signal: AbortSignal.timeout(20_000),
  });
  const body = (await res.json()) as { type?: string };
  // a problem's code ends its type URL
  return { status: res.status, code: body.type?.split(':').pop() ?? 'sold' };
}

describe('one master paused', () => {
  it('purchases whose keys are on the live masters are sold; those with a key on it are refused unsent', async () => {
    const { prefix, keys, productId, victim } = await layoutOffVictim();
    const config = ns.config({
      REDIS_CLUSTER_NODES: cluster.nodesEnv,
      KEY_PREFIX: prefix,
      QUEUE_PREFIX: `{${prefix}q}`,
      REDIS_COMMAND_TIMEOUT_MS: '1000',
      RATE_LIMIT_USER: '100/s',
      RATE_LIMIT_IP: '1000/s',
      TRUST_PROXY: 'true',
    });
    const app = await startApp(config);
    try {
      await fetch(`${app.url}/admin/products/${productId}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ total: 100, segments: SEGMENTS, strategy: 'lockfree' }),
      });
      const onVictim = async (key: string) => portOf(await ownerOf(key)) === victim;
      // one client address whose bucket is on the victim: every purchase below shares it
      let ip = '';
      for (let i = 1; !ip; i++) {
        if (await onVictim(keys.rateLimit('seckill', 'ip', `10.0.0.${i}`))) ip = `10.0.0.${i}`;
      }
      /** shoppers whose home segment is on a live master, and on the paused one */
      const live: string[] = [];
      const touching: string[] = [];
      for (let i = 0; live.length < 8 || touching.length < 9; i++) {
        const user = `u${i}`;
        const home = homeSegment(user, SEGMENTS);
        // a keyed purchase's record lives beside the home segment: one shard per purchase
        const record = keys.idempotency(productId, home, user).record('x');
        expect(calculateSlot(record)).toBe(calculateSlot(keys.segment(productId, home).state));
        const mine = await onVictim(record);
        if (mine && touching.length < 9) touching.push(user);
        if (!mine && live.length < 8) live.push(user);
      }
      const keyed = (user: string) => buy(app, productId, user, ip, 'k1');
      const warm = await buy(app, productId, live[0]!, '127.0.0.9');
      expect(warm).toEqual({ status: 202, code: 'sold' });

      const node = cluster.nodes.find((n) => n.port === victim)!;
      process.kill(node.process.pid, 'SIGSTOP');
      try {
        // the first command on it waits its whole timeout: the shard is then known to be sick
        const first = await keyed(touching[0]!);
        expect(first).toEqual({ status: 503, code: 'store-unavailable' });
        const [sold, refused] = await Promise.all([
          Promise.all(live.slice(1).map(keyed)),
          Promise.all(touching.slice(1).map(keyed)),
        ]);
        expect(sold).toEqual(live.slice(1).map(() => ({ status: 202, code: 'sold' })));
        expect(refused).toEqual(
          touching.slice(1).map(() => ({ status: 503, code: 'shard-unavailable' })),
        );
      } finally {
        process.kill(node.process.pid, 'SIGCONT');
      }
      // a probe finds it answering again: its shoppers buy
      await waitFor(
        'the paused master to be served again',
        async () => (await keyed(touching[1]!)).status === 202,
        20_000,
      );
      const view = (await (
        await fetch(`${app.url}/admin/products/${productId}`, {
          headers: { authorization: `Bearer ${ns.adminToken}` },
        })
      ).json()) as { remaining: number };
      // 8 live shoppers and one who bought after the pause; no refused purchase sold anything
      expect(view.remaining).toBe(100 - 9);
    } finally {
      await app.close();
    }
  }, 120_000);
});
