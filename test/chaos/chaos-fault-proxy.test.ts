/**
 * The chaos run's fault proxy in front of a real Redis: bytes pass unchanged; a cut resets the
 * connections and refuses new ones until healed; a delay holds replies that long, in order; a
 * replica lag starves only the links that asked for PSYNC.
 */
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { faultProxy, type FaultProxy } from '../../load-tests/chaos/fault-proxy.js';
import { useNamespace } from '../support/namespace.js';
import { waitFor } from '../support/cli.js';

const ns = useNamespace();
let proxy: FaultProxy;
const clients: Redis[] = [];
const client = () => {
  const r = new Redis(proxy.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => undefined);
  clients.push(r);
  return r;
};

beforeAll(async () => {
  proxy = await faultProxy(Number(new URL(ns.redisUrl).port));
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await proxy.close();
});

describe('fault proxy', () => {
  it('passes commands through, then a cut resets the link and refuses new ones until healed', async () => {
    const key = `${ns.id}:fp`;
    const a = client();
    expect(await a.set(key, 'v')).toBe('OK');
    proxy.cut();
    await expect(a.get(key)).rejects.toThrow();
    const b = client();
    await expect(b.get(key)).rejects.toThrow();
    proxy.heal();
    expect(await client().get(key)).toBe('v');
  });

  it('a delay holds each reply, and replies keep their order across the heal', async () => {
    const key = `${ns.id}:fp-order`;
    const c = client();
    await c.del(key);
    proxy.delay(300);
    const started = Date.now();
    const first = Promise.all(Array.from({ length: 50 }, (_, i) => c.rpush(key, String(i))));
    // the scenario: the commands pile up behind the hold before the heal
    await new Promise((r) => setTimeout(r, 100));
    proxy.heal(); // what is held stays ahead of what comes after
    const second = Promise.all(Array.from({ length: 50 }, (_, i) => c.rpush(key, String(50 + i))));
    const [a, b] = await Promise.all([first, second]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(a).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(b).toEqual(Array.from({ length: 50 }, (_, i) => 51 + i));
    expect(await c.lrange(key, 0, -1)).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
  });

  it('a replica lag starves only a link that asked for PSYNC, and the heal resets that link', async () => {
    // an inline PSYNC without arguments: Redis answers an error, and no replica is made of the
    // suite's shared server; the proxy knows the link by its handshake all the same
    const link = connect(proxy.port, '127.0.0.1');
    await new Promise((r) => link.once('connect', r));
    const got: string[] = [];
    link.on('data', (c: Buffer) => got.push(c.toString()));
    const closed = new Promise((r) => link.once('close', r));
    link.on('error', () => undefined);
    link.write('PSYNC\r\n');
    // before the lag: answered
    await waitFor('the PSYNC answered', async () => /^-ERR/.test(got.join('')), 5_000, 10);
    got.length = 0;
    proxy.lagReplicas();
    link.write('PSYNC\r\n');
    const c = client();
    expect(await c.ping()).toBe('PONG'); // clients are served at once
    // the scenario: time for a starved answer to show
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toEqual([]);
    proxy.heal();
    await closed;
    expect(got).toEqual([]);
    expect(await c.ping()).toBe('PONG');
  });
});
