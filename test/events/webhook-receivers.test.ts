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
