/**
 * A subscription whose SSUBSCRIBE reply is lost with its connection must fail, not wait forever.
 * ioredis forgets a command in flight at the reconnect (resending is off), and the subscriber
 * connection has no command timeout: the subscription's promise never settled. Every purchase of
 * a product then waited on it for good in a freshly started API process (the catalogue subscribes
 * to the product's events before its first read), and so did a lock waiter (its unlock notices),
 * holding its segment's in-process latch: a one-Redis chaos soak saw an API process answer no
 * purchase of a product for minutes after the faults had healed.
 */
import { afterEach, expect, it } from 'vitest';
import { Catalogue } from '../../src/inventory/catalogue/catalogue.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { Keys } from '../../src/redis/keys.js';
import { PubSub } from '../../src/redis/pubsub.js';
import { useNamespace } from '../support/namespace.js';
import { replyLosingProxy } from '../support/proxy.js';
import { waitFor } from '../support/cli.js';
import { settledWithin as outcome } from '../support/settled.js';

const ns = useNamespace();
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function subscriberBehindProxy(opts: { subscribeTimeoutMs?: number } = {}) {
  const proxy = await replyLosingProxy(Number(new URL(ns.redisUrl).port));
  cleanups.push(() => proxy.close());
  const name = `pubsub-in-flight-${ns.id}`;
  const subscriber = createRedis(proxy.url, { name, role: 'subscriber' });
  cleanups.push(() => closeRedis(subscriber));
  const pubsub = new PubSub(subscriber, opts);
  cleanups.push(() => pubsub.close());
  return { proxy, pubsub, name };
}

it('a subscription whose reply is lost with the connection fails, and the next one works', async () => {
  const { proxy, pubsub } = await subscriberBehindProxy();
  const publisher = createRedis(ns.redisUrl, { name: 'pubsub-in-flight-pub' });
  cleanups.push(() => closeRedis(publisher));
  const channel = `${ns.id}:events`;
  proxy.loseReplyTo((cmd) => cmd.includes('ssubscribe') && cmd.includes(channel), {
    thenClose: true,
    push: true,
  });
  const heard: string[] = [];
  expect(
    await outcome(
      pubsub.subscribe(channel, (m) => heard.push(m)),
      5_000,
    ),
  ).toBe('failed: Connection is closed.');
  expect(proxy.lost).toBe(1);
  // the failed channel is forgotten: the next subscription asks Redis again, and hears
  expect(
    await outcome(
      pubsub.subscribe(channel, (m) => heard.push(m)),
      5_000,
    ),
  ).toBe('answered');
  await publisher.spublish(channel, 'after');
  await waitFor('the message', async () => heard.includes('after'), 5_000);
  expect(heard).toEqual(['after']);
});

it('a subscription with no reply at all fails after its timeout', async () => {
  const { proxy, pubsub } = await subscriberBehindProxy({ subscribeTimeoutMs: 300 });
  const channel = `${ns.id}:silent`;
  // the reply is dropped and the connection stays: only the timeout can end the wait
  proxy.loseReplyTo((cmd) => cmd.includes('ssubscribe') && cmd.includes(channel), { push: true });
  expect(
    await outcome(
      pubsub.subscribe(channel, () => {}),
      5_000,
    ),
  ).toBe(`failed: no reply to the subscription of "${channel}" within 300 ms`);
  expect(pubsub.size).toBe(0);
});

it("a product's first read whose subscription is lost fails, and the next read loads it", async () => {
  const { proxy, pubsub } = await subscriberBehindProxy();
  const redis = createRedis(ns.redisUrl, { name: 'pubsub-in-flight-cmd' });
  cleanups.push(() => closeRedis(redis));
  const keys = new Keys(ns.id);
  const productId = `${ns.id}-p`;
  const k = keys.product(productId);
  await redis.hset(k.meta, { epoch: 1, total: 10, segments: 2, strategy: 'segmented' });
  const catalogue = new Catalogue({ redis, pubsub, keys });
  proxy.loseReplyTo((cmd) => cmd.includes('ssubscribe') && cmd.includes(k.events), {
    thenClose: true,
    push: true,
  });
  const first = catalogue.get(productId);
  expect(await outcome(Promise.resolve(first), 5_000)).toBe('failed: Connection is closed.');
  const view = await catalogue.get(productId);
  expect(view?.epoch).toBe(1);
  expect(view?.segments).toBe(2);
});

it('a re-subscription lost in a second reset neither ends the process nor loses the channel', async () => {
  // ioredis re-subscribes after a reconnect with a call nobody awaits: failed unhandled, it ends
  // the process (here the subscriber's connection is killed again and again)
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  cleanups.push(() => process.off('unhandledRejection', onUnhandled));
  const { proxy, pubsub, name } = await subscriberBehindProxy();
  const admin = createRedis(ns.redisUrl, { name: 'pubsub-in-flight-admin' });
  cleanups.push(() => closeRedis(admin));
  const channel = `${ns.id}:resubscribed`;
  const heard: string[] = [];
  expect(
    await outcome(
      pubsub.subscribe(channel, (m) => heard.push(m)),
      5_000,
    ),
  ).toBe('answered');
  // the first reset: the subscriber's connection killed at the server
  proxy.loseReplyTo((cmd) => cmd.includes('ssubscribe') && cmd.includes(channel), {
    thenClose: true,
    push: true,
  });
  const clients = String(await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
  const id = new RegExp(`id=(\\d+) .*name=${name} `).exec(clients)?.[1];
  expect(id).toBeDefined();
  await admin.call('CLIENT', 'KILL', 'ID', id!);
  // the second: the re-subscription's confirmation lost with its connection
  await waitFor('the lost re-subscription', async () => proxy.lost === 1, 10_000);
  // the channel is heard again on the next connection
  await waitFor(
    'a message on the channel',
    async () => {
      await admin.spublish(channel, 'again');
      return heard.includes('again');
    },
    10_000,
  );
  // the scenario: a tick for a rejection still on its way to being reported
  await new Promise((r) => setTimeout(r, 100));
  expect(unhandled).toEqual([]);
});
