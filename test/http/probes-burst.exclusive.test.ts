/**
 * Connection admission with several API processes: each accepts its own connections from the
 * shared socket. With Node's default round-robin the primary accepts every connection and hands
 * it over, so a busy primary (it runs the order workers under `up`) holds every new connection,
 * probes included. Constructed here: the primary frozen (SIGSTOP), then 600 shoppers' connections
 * arrive at once while the probes are asked. The probes answer (status and body), and the sale
 * ends exact: 300 sold, 300 told it is sold out.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor, type CliRun } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { freePort } from '../support/ports.js';
import { NO_RATE_LIMITS } from '../../src/config/index.js';

const ns = useNamespace();
let api: CliRun;
let port: number;
let base: string;

beforeAll(async () => {
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = runCli(['serve'], {
    REDIS_URL: ns.redisUrl,
    DATABASE_URL: ns.databaseUrl,
    KEY_PREFIX: ns.id,
    QUEUE_PREFIX: `{${ns.id}q}`,
    AUTH_MODE: 'dev',
    ...NO_RATE_LIMITS,
    ADMIN_TOKEN: ns.adminToken,
    PORT: String(port),
    API_PROCESSES: '2',
    LOG_LEVEL: 'warn',
  });
  await waitFor(
    () => `the API (output so far:\n${api.output()})`,
    async () => (await fetch(`${base}/readyz`)).ok,
    60_000,
  );
});
afterAll(async () => {
  api.child.kill('SIGCONT');
  api.child.kill('SIGTERM');
  await api.exited;
});

/** One shopper on a connection of its own: the status line of the answer. */
function purchase(productId: string, user: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const body = JSON.stringify({ productId });
    s.setTimeout(60_000, () => s.destroy(new Error(`no answer for ${user}`)));
    s.on('connect', () =>
      s.write(
        `POST /seckill HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n` +
          `x-user-id: ${user}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      ),
    );
    let head = '';
    s.on('data', (d) => {
      head += d.toString();
      if (head.includes('\r\n')) {
        s.destroy();
        resolve(Number(head.split(' ')[1]));
      }
    });
    s.on('error', reject);
  });
}

describe('probes while a burst of connections arrives, the primary frozen', () => {
  it('the API processes accept and answer on their own: probes 200 with their bodies, the sale exact', async () => {
    const productId = `pb${Date.now().toString(36)}`;
    const seeded = await fetch(`${base}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ total: 300, segments: 4, strategy: 'lockfree' }),
    });
    expect(seeded.status).toBe(201);
    process.kill(api.child.pid!, 'SIGSTOP');
    try {
      const answers = Promise.all(
        Array.from({ length: 600 }, (_, i) => purchase(productId, `burst${i}`)),
      );
      for (const [path, body] of [
        ['/healthz', { status: 'ok' }],
        ['/readyz', { status: 'ready' }],
      ] as const) {
        const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(30_000) });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject(body);
      }
      const statuses = await answers;
      expect(statuses.filter((s) => s === 202)).toHaveLength(300);
      expect(statuses.filter((s) => s === 409)).toHaveLength(300);
    } finally {
      process.kill(api.child.pid!, 'SIGCONT');
    }
  });
});
