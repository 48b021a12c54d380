/**
 * Receivers' names are resolved off the process's shared thread pool (receiver-names.ts), against
 * a real DNS server on a local port (test/support/dns-responder.ts): a receiver whose name answers
 * slowly holds neither the identity provider's key refresh nor a healthy receiver's delivery;
 * answers are kept for their TTL in a bounded cache, a lookup in flight is shared; and every
 * address a name resolves to is checked before the socket may connect to it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  checkReceiverHost,
  createSender,
  ReceiverNames,
  type ReceiverRules,
  type SendOutcome,
} from '../../src/events/index.js';
import { JwksKeys } from '../../src/http/jwks.js';
import { waitFor } from '../support/cli.js';
import { DnsResponder } from '../support/dns-responder.js';

const SLOW = 'slow.receivers.test';
const HEALTHY = 'healthy.receivers.test';

let dns: DnsResponder;
let receiver: Server;
let port: number;
const hits = new Map<string, number>();
const names: ReceiverNames[] = [];

/** A resolver asking the local DNS server, with a deadline far beyond any wait of the test. */
function resolverOf(o: { maxNames?: number } = {}): ReceiverNames {
  const n = new ReceiverNames({ servers: [dns.server], timeoutMs: 60_000, tries: 1, ...o });
  names.push(n);
  return n;
}

beforeAll(async () => {
  dns = await new DnsResponder().start();
  receiver = createServer((req, res) => {
    const host = String(req.headers.host).split(':')[0]!;
    hits.set(host, (hits.get(host) ?? 0) + 1);
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  port = (receiver.address() as AddressInfo).port;
});
afterEach(() => {
  for (const n of names.splice(0)) n.close();
});
afterAll(async () => {
  await dns.close();
  await new Promise((r) => receiver.close(r));
});

describe("a receiver's slow DNS", () => {
  it('holds neither a JWKS refresh nor a healthy receiver while its lookup is pending', async () => {
    dns.records.set(SLOW, { addresses: ['127.0.0.1'] });
    dns.records.set(HEALTHY, { addresses: ['127.0.0.1'] });
    dns.hold(SLOW);
    const rules: ReceiverRules = { allowPrivate: true, httpHosts: [SLOW, HEALTHY] };
    const sender = createSender(rules, 60_000, resolverOf());
    // the identity provider's key set, on a name the process resolves with dns.lookup (the pool)
    const { publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256' };
    const provider = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    try {
      // more deliveries to the slow name than libuv has threads (4)
      const slow: Array<SendOutcome | undefined> = Array(8).fill(undefined);
      const sent = slow.map((_, i) =>
        sender.send(`http://${SLOW}:${port}/hooks`, {}, '{}').then((o) => (slow[i] = o)),
      );
      await waitFor(`a query of ${SLOW} held`, async () => dns.unanswered(SLOW) >= 1, 10_000, 20);

      const keys = new JwksKeys({
        url: `http://localhost:${(provider.address() as AddressInfo).port}/jwks.json`,
      });
      await expect(keys.keyFor({ alg: 'RS256', kid: 'k1' })).resolves.toBeDefined();
      expect(keys.fetches).toBe(1);
      expect(await sender.send(`http://${HEALTHY}:${port}/hooks`, {}, '{}')).toEqual({
        code: 'delivered',
        status: 204,
      });
      expect(hits.get(HEALTHY)).toBe(1);

      // all that while the slow name's lookup was still pending, and nothing reached it
      expect(dns.unanswered(SLOW)).toBeGreaterThanOrEqual(1);
      expect(slow).toEqual(Array(8).fill(undefined));
      expect(hits.get(SLOW)).toBeUndefined();
      // one lookup in flight, shared by the 8 deliveries: one A and one AAAA query
      expect(dns.asked(SLOW, 'A')).toBe(1);
      expect(dns.asked(SLOW, 'AAAA')).toBe(1);

      dns.release(SLOW);
      await Promise.all(sent);
      expect(slow).toEqual(Array(8).fill({ code: 'delivered', status: 204 }));
      expect(hits.get(SLOW)).toBe(8);
    } finally {
      sender.close();
      await new Promise((r) => provider.close(r));
    }
  });
});

describe('the resolver', () => {
  it('keeps an answer for its TTL, and a name of TTL 0 not at all', async () => {
    const n = resolverOf();
    dns.records.set('kept.receivers.test', { addresses: ['192.0.2.10'], ttl: 60 });
    dns.records.set('fresh.receivers.test', { addresses: ['192.0.2.11'], ttl: 0 });
    for (let i = 0; i < 3; i++) {
      expect(await n.resolve('kept.receivers.test')).toEqual([
        { address: '192.0.2.10', family: 4 },
      ]);
      expect(await n.resolve('fresh.receivers.test')).toEqual([
        { address: '192.0.2.11', family: 4 },
      ]);
    }
    expect(dns.asked('kept.receivers.test', 'A')).toBe(1);
    expect(dns.asked('fresh.receivers.test', 'A')).toBe(3);
  });

  it('keeps at most maxNames, dropping the least recently used', async () => {
    const n = resolverOf({ maxNames: 2 });
    for (const name of ['b1', 'b2', 'b3']) {
      dns.records.set(`${name}.receivers.test`, { addresses: ['192.0.2.20'] });
    }
    await n.resolve('b1.receivers.test');
    await n.resolve('b2.receivers.test');
    await n.resolve('b1.receivers.test'); // b1 used last: b2 is the one to go
    await n.resolve('b3.receivers.test');
    await n.resolve('b1.receivers.test');
    await n.resolve('b2.receivers.test');
    expect(['b1', 'b2', 'b3'].map((b) => dns.asked(`${b}.receivers.test`, 'A'))).toEqual([1, 2, 1]);
  });

  it('answers IPv4 and IPv6 addresses, localhost without asking, and ENOTFOUND for an unknown name', async () => {
    const n = resolverOf();
    dns.records.set('both.receivers.test', { addresses: ['192.0.2.30', '2001:db8::30'] });
    expect(await n.resolve('both.receivers.test')).toEqual([
      { address: '192.0.2.30', family: 4 },
      { address: '2001:db8::30', family: 6 },
    ]);
    const before = dns.queries.length;
    expect(await n.resolve('localhost')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(dns.queries.length).toBe(before);
    await expect(n.resolve('nowhere.receivers.test')).rejects.toMatchObject({
      code: 'ENOTFOUND',
    });
  });
});

describe('every resolved address is checked', () => {
  const PUBLIC_ONLY: ReceiverRules = { allowPrivate: false, httpHosts: ['mixed.receivers.test'] };

  it('refuses a name with one private address among public ones, at registration and at connection', async () => {
    const n = resolverOf();
    dns.records.set('mixed.receivers.test', { addresses: ['8.8.8.8', '127.0.0.1'] });
    await expect(
      checkReceiverHost(new URL('https://mixed.receivers.test/hooks'), PUBLIC_ONLY, n),
    ).rejects.toThrow(/resolves to 127\.0\.0\.1, a private/);
    const sender = createSender(PUBLIC_ONLY, 10_000, n);
    try {
      const r = await sender.send(`http://mixed.receivers.test:${port}/hooks`, {}, '{}');
      expect(r).toMatchObject({
        code: 'failed',
        reason: expect.stringMatching(/^refused: mixed\.receivers\.test resolves to 127\.0\.0\.1/),
      });
      expect(hits.get('mixed.receivers.test')).toBeUndefined();
    } finally {
      sender.close();
    }
    // the IPv6 transition forms count as private here too
    dns.records.set('sixtofour.receivers.test', { addresses: ['2002:7f00:1::1'] });
    await expect(
      checkReceiverHost(new URL('https://sixtofour.receivers.test/'), PUBLIC_ONLY, n),
    ).rejects.toThrow(/resolves to 2002:7f00:1::1, an IPv6 transition/);
  });
});
