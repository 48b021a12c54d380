/**
 * Where webhooks may go (a webhook sender is an SSRF door): https, or plain http to an allowed
 * host; no private, loopback or link-local address (in any spelling) unless
 * WEBHOOK_ALLOW_PRIVATE; checked at registration and on every connection. And the retry
 * schedule's jitter and Retry-After.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkReceiverHost,
  checkReceiverUrl,
  createSender,
  isPrivateAddress,
  MAX_RETRY_AFTER_MS,
  ReceiverRefused,
  retryAfterMs,
  retryDelay,
  type ReceiverRules,
} from '../../src/events/index.js';

const PUBLIC_ONLY: ReceiverRules = { allowPrivate: false, httpHosts: [] };
const refused = (url: string, rules = PUBLIC_ONLY) => {
  try {
    checkReceiverUrl(url, rules);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ReceiverRefused);
    return (err as Error).message;
  }
};

describe('receiver URLs', () => {
  it('takes https to a public host, and plain http only to an allowed one', () => {
    expect(refused('https://warehouse.example/hooks')).toBeUndefined();
    expect(refused('http://warehouse.example/hooks')).toMatch(/plain http .* not allowed/);
    expect(
      refused('http://warehouse.example/hooks', {
        allowPrivate: false,
        httpHosts: ['warehouse.example'],
      }),
    ).toBeUndefined();
    expect(refused('ftp://warehouse.example/hooks')).toMatch(/must be https/);
    expect(refused('https://user:pw@warehouse.example/hooks')).toMatch(/credentials/);
  });

  it.each([
    'https://127.0.0.1/hooks',
    'https://10.0.0.5/hooks',
    'https://172.20.1.1/',
    'https://192.168.1.10/',
    'https://169.254.169.254/latest/meta-data/',
    'https://100.64.0.1/',
    'https://0.0.0.0/',
    'https://[::1]/',
    'https://[fd00::1]/',
    'https://[fe80::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[64:ff9b::a00:1]/',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://017700000001/',
  ])('refuses %s: a private address in some spelling', (url) => {
    expect(refused(url)).toMatch(/private/);
  });

  // IPv6 forms that carry an IPv4 address: mapped and NAT64 are unwrapped and the IPv4 checked;
  // every other transition form (and site-local) is refused whatever it carries
  it.each([
    ['::127.0.0.1', 'IPv4-compatible, loopback', /transition/],
    ['::8.8.8.8', 'IPv4-compatible, public', /transition/],
    ['::ffff:0:127.0.0.1', 'IPv4-translated (SIIT), loopback', /transition/],
    ['::ffff:0:8.8.8.8', 'IPv4-translated (SIIT), public', /transition/],
    ['64:ff9b:1::127.0.0.1', 'local-use NAT64, loopback', /transition/],
    ['64:ff9b:1::8.8.8.8', 'local-use NAT64, public', /transition/],
    ['2002:7f00:1::', '6to4 of 127.0.0.1', /transition/],
    ['2002:808:808::1', '6to4 of 8.8.8.8', /transition/],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo (client 127.0.0.1)', /transition/],
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'Teredo (client 8.8.8.8)', /transition/],
    ['fec0::1', 'site-local', /transition or site-local/],
    ['fefe::1', 'site-local, its last /10 address', /transition or site-local/],
    ['0:0:0:0:0:ffff:127.0.0.1', 'mapped, spelled out, loopback', /private address \(127\.0\.0\.1/],
    ['::ffff:169.254.169.254', 'mapped, the metadata service', /private address \(169\.254/],
    ['64:ff9b::10.0.0.1', 'NAT64, private', /private address \(10\.0\.0\.1/],
  ])('refuses [%s] (%s) as a literal and as a resolved address', (address, _what, why) => {
    expect(refused(`https://[${address}]/hooks`)).toMatch(why);
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    ['::ffff:8.8.8.8', 'mapped, public'],
    ['64:ff9b::808:808', 'NAT64 (well-known prefix), public'],
    ['2606:4700:4700::1111', 'plain public IPv6'],
    ['2001:4860:4860::8888', 'public, beside Teredo 2001::/32'],
  ])('takes [%s] (%s)', (address) => {
    expect(refused(`https://[${address}]/hooks`)).toBeUndefined();
    expect(isPrivateAddress(address)).toBe(false);
  });

  it('allows private addresses, over http too, only with WEBHOOK_ALLOW_PRIVATE', () => {
    const dev = { allowPrivate: true, httpHosts: [] };
    expect(refused('http://127.0.0.1:9000/hooks', dev)).toBeUndefined();
    expect(refused('http://localhost:9000/hooks', dev)).toBeUndefined();
    expect(refused('http://10.1.2.3/hooks', dev)).toBeUndefined();
    // a public name over plain http still needs WEBHOOK_HTTP_HOSTS
    expect(refused('http://warehouse.example/hooks', dev)).toMatch(/plain http/);
  });

  it('refuses at registration a name that resolves to a private address', async () => {
    await expect(
      checkReceiverHost(new URL('https://localhost/hooks'), PUBLIC_ONLY),
    ).rejects.toThrow(/resolves to .*private/);
    await expect(
      checkReceiverHost(new URL('https://localhost/hooks'), { allowPrivate: true, httpHosts: [] }),
    ).resolves.toBeUndefined();
  });

  it('knows public addresses from private ones', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPrivateAddress(a), a).toBe(false);
    }
    for (const a of ['127.0.0.2', '::1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '224.0.0.1']) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
  });
});

describe('the sender checks every connection', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('refuses a name that resolves to loopback (allowed over http) and a loopback address, asking nothing', async () => {
    const sender = createSender(
      { allowPrivate: false, httpHosts: ['localhost', '127.0.0.1'] },
      2_000,
    );
    const byName = await sender.send(`http://localhost:${port}/`, {}, '{}');
    expect(byName).toMatchObject({
      code: 'failed',
      reason: expect.stringMatching(/^refused: .*private/),
    });
    const byAddress = await sender.send(`http://127.0.0.1:${port}/`, {}, '{}');
    expect(byAddress).toMatchObject({ code: 'failed', reason: expect.stringMatching(/^refused/) });
    expect(hits).toBe(0);
    sender.close();
    const dev = createSender({ allowPrivate: true, httpHosts: [] }, 2_000);
    expect(await dev.send(`http://localhost:${port}/`, {}, '{}')).toEqual({
      code: 'delivered',
      status: 200,
    });
    expect(hits).toBe(1);
    dev.close();
  });
});

describe('the retry schedule', () => {
  const schedule = [1_000, 60_000];

  it('spreads each delay +-20 % and ends after the last', () => {
    expect(retryDelay(schedule, 1, undefined, () => 0)).toBe(800);
    expect(retryDelay(schedule, 1, undefined, () => 0.5)).toBe(1_000);
    expect(retryDelay(schedule, 1, undefined, () => 0.999_999)).toBe(1_200);
    expect(retryDelay(schedule, 2, undefined, () => 0)).toBe(48_000);
    expect(retryDelay(schedule, 3)).toBeUndefined();
    const spread = new Set(Array.from({ length: 50 }, () => retryDelay(schedule, 2)));
    expect(spread.size).toBeGreaterThan(10);
    for (const d of spread) {
      expect(d).toBeGreaterThanOrEqual(48_000);
      expect(d).toBeLessThanOrEqual(72_000);
    }
  });

  it('waits a longer Retry-After, up to a day', () => {
    expect(retryDelay(schedule, 1, 30_000, () => 0.5)).toBe(30_000);
    expect(retryDelay(schedule, 1, 10, () => 0.5)).toBe(1_000);
    expect(retryDelay(schedule, 1, 10 * MAX_RETRY_AFTER_MS, () => 0.5)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('120')).toBe(120_000);
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('Tue, 01 Jan 2030 00:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});
