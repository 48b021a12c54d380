/**
 * The operators' audit log (PostgreSQL, GET /admin/audit): every seed is recorded with who (the
 * token or a dashboard session, the declared operator, the address), when and what, and how it
 * ended (done with its epoch, refused with the refusal's code); pages newest first; a name that is
 * not one is refused and nothing changes; and when the log cannot be written the change is not made.
 * Every change of a webhook endpoint (add, disable, enable, rotate, replay; refusals too) is
 * recorded, from the API and from the CLI, and no secret is.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor, FEED_START } from '../../src/events/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
let app: RunningApp;

beforeAll(async () => {
  // a blocked statement gives up after a second: the log's write fails fast
  app = await startApp(
    // a receiver on this machine for the webhook endpoints' changes (no worker: nothing is sent)
    ns.config({ PG_STATEMENT_TIMEOUT_MS: '1000', WEBHOOK_ALLOW_PRIVATE: 'true' }),
  );
});
afterAll(async () => {
  await app?.close();
});

const admin = { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' };
const newProduct = () => `a${randomBytes(4).toString('hex')}`;
const SEED = { strategy: 'segmented', segments: 2, total: 10 };

interface Entry {
  id: string;
  at: string;
  actor: { via: string; session?: string; operator?: string; address?: string };
  action: string;
  productId: string | null;
  epoch: number | null;
  request: Record<string, unknown>;
  outcome: string;
  result: Record<string, unknown>;
  finishedAt: string | null;
}

const seed = (productId: string, headers: Record<string, string>, query = '', body = SEED) =>
  fetch(`${app.url}/admin/products/${productId}${query}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

async function auditOf(productId: string): Promise<Entry[]> {
  const res = await fetch(`${app.url}/admin/audit?productId=${productId}`, { headers: admin });
  expect(res.status).toBe(200);
  return ((await res.json()) as { entries: Entry[] }).entries;
}

describe('the audit log', () => {
  it('records a seed and a refused reseed: who, when, what, how it ended', async () => {
    const productId = newProduct();
    const before = Date.now();
    expect((await seed(productId, { ...admin, 'x-operator': 'Ana Lima' })).status).toBe(201);
    // a live sale is not reseeded without force: refused, recorded as such
    const live = await seed(productId, admin);
    expect(live.status).toBe(409);
    const [refused, done] = await auditOf(productId);
    expect(done).toMatchObject({
      actor: { via: 'token', operator: 'Ana Lima', address: expect.any(String) },
      action: 'seed',
      productId,
      epoch: 1,
      request: { total: 10, segments: 2, strategy: 'segmented' },
      outcome: 'done',
      result: { productId, epoch: 1 },
    });
    expect(Date.parse(done!.at)).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(done!.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(done!.at));
    expect(refused).toMatchObject({
      actor: { via: 'token' },
      action: 'seed',
      outcome: 'refused',
      epoch: null,
      result: { code: 'sale-live' },
    });
    expect(refused!.actor.operator).toBeUndefined();
    expect(BigInt(refused!.id)).toBeGreaterThan(BigInt(done!.id));
  });

  it("records a dashboard session's change as the session's, not the token's", async () => {
    const login = await fetch(`${app.url}/admin/dashboard/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: ns.adminToken }),
    });
    expect(login.status).toBe(204);
    const cookie = login.headers
      .getSetCookie()
      .find((c) => c.startsWith('seckill_admin='))!
      .split(';')[0]!;
    const sessionId = cookie.split('=')[1]!.split('.')[1]!;
    const productId = newProduct();
    expect((await seed(productId, { cookie, 'x-operator': 'night-shift' })).status).toBe(201);
    const [entry] = await auditOf(productId);
    expect(entry!.actor).toMatchObject({
      via: 'session',
      session: sessionId.slice(0, 8),
      operator: 'night-shift',
    });
  });

  it('refuses an X-Operator that is not a name (400), and then changes and records nothing', async () => {
    const productId = newProduct();
    for (const bad of ['', 'x'.repeat(65), 'semi;colon', 'new\tline']) {
      const res = await seed(productId, { ...admin, 'x-operator': bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect(await auditOf(productId)).toEqual([]);
    expect((await fetch(`${app.url}/products/${productId}`)).status).toBe(404);
  });

  it('pages newest first, and refuses a bad query', async () => {
    const productId = newProduct();
    await seed(productId, admin);
    for (let i = 0; i < 4; i++) await seed(productId, admin, '?force=true');
    const after = async (next?: string) =>
      (await (
        await fetch(
          `${app.url}/admin/audit?productId=${productId}&limit=2${next ? `&after=${next}` : ''}`,
          { headers: admin },
        )
      ).json()) as { entries: Entry[]; next: string | null };
    const first = await after();
    expect(first.entries.map((e) => e.epoch)).toEqual([5, 4]);
    const second = await after(first.next!);
    expect(second.entries.map((e) => e.epoch)).toEqual([3, 2]);
    const third = await after(second.next!);
    expect(third.entries.map((e) => e.epoch)).toEqual([1]);
    expect(third.next).toBeNull();
    for (const q of [
      'limit=0',
      'limit=501',
      'after=abc',
      'before=abc',
      'after=1&before=1',
      'productId=a%20b',
      'other=1',
    ]) {
      expect((await fetch(`${app.url}/admin/audit?${q}`, { headers: admin })).status, q).toBe(400);
    }
    expect((await fetch(`${app.url}/admin/audit`)).status).toBe(401);
  });

  it('makes no change it cannot record: the log locked, the seed is a 503 and nothing is seeded', async () => {
    const productId = newProduct();
    const locker = new pg.Client({ connectionString: ns.databaseUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table admin_audit in access exclusive mode');
      const res = await seed(productId, admin);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { type: string }).type).toMatch(/store-unavailable$/);
      await locker.query('rollback');
    } finally {
      await locker.end();
    }
    expect((await fetch(`${app.url}/products/${productId}`)).status).toBe(404);
    expect(await auditOf(productId)).toEqual([]);
  });
});

describe('webhook endpoint changes in the audit log', () => {
  const call = (method: string, path: string, body?: unknown, operator = 'Ana Lima') =>
    fetch(`${app.url}${path}`, {
      method,
      headers: { ...admin, 'x-operator': operator },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  /** the log's webhook entries of `endpointId` (or of every endpoint), oldest first */
  async function webhookEntries(endpointId?: string): Promise<Entry[]> {
    const res = await fetch(`${app.url}/admin/audit?limit=500`, { headers: admin });
    const { entries } = (await res.json()) as { entries: Entry[] };
    return entries
      .filter((e) => e.action.startsWith('webhook-'))
      .filter((e) => !endpointId || JSON.stringify(e).includes(endpointId))
      .reverse();
  }

  it('records add, disable, enable, rotate and replay from the API with who and what, and no secret', async () => {
    const url = 'http://127.0.0.1:9/hooks/audit';
    const added = await call('POST', '/admin/webhook-endpoints', { url, events: ['order.paid'] });
    expect(added.status).toBe(201);
    const { id, secret } = (await added.json()) as { id: string; secret: string };
    const base = `/admin/webhook-endpoints/${id}`;
    expect((await call('POST', `${base}/disable`)).status).toBe(200);
    expect((await call('POST', `${base}/enable`)).status).toBe(200);
    const rotated = (await (await call('POST', `${base}/rotate`)).json()) as { secret: string };
    const from = encodeCursor(FEED_START);
    expect((await call('POST', `${base}/replay`, { from })).status).toBe(202);

    const entries = await webhookEntries(id);
    expect(entries.map((e) => [e.action, e.outcome])).toEqual([
      ['webhook-add', 'done'],
      ['webhook-disable', 'done'],
      ['webhook-enable', 'done'],
      ['webhook-rotate', 'done'],
      ['webhook-replay', 'done'],
    ]);
    for (const e of entries) {
      expect(e.actor).toEqual({ via: 'token', operator: 'Ana Lima', address: expect.any(String) });
      expect(e.productId).toBeNull();
      expect(e.finishedAt).not.toBeNull();
    }
    const [add, disable, enable, rotate, replay] = entries;
    expect(add!.request).toEqual({ url, events: ['order.paid'] });
    expect(add!.result).toMatchObject({ id, url, events: ['order.paid'], status: 'active' });
    expect(disable!.request).toEqual({ endpointId: id });
    expect(disable!.result).toMatchObject({ id, status: 'disabled' });
    expect(enable!.result).toMatchObject({ id, status: 'active' });
    expect(rotate!.request).toEqual({ endpointId: id });
    expect(replay!.request).toEqual({ endpointId: id, from });
    expect(replay!.result).toEqual({ orders: 0, lanes: 0 });
    // the secrets are answered once, and never kept in the log
    const log = JSON.stringify(entries);
    expect(log).not.toContain('whsec_');
    expect(log).not.toContain(secret);
    expect(log).not.toContain(rotated.secret);
  });

  it('records refusals: a refused URL and an unknown endpoint', async () => {
    const before = (await webhookEntries()).length;
    const refused = await call('POST', '/admin/webhook-endpoints', {
      url: 'ftp://warehouse.example/hooks',
      events: ['*'],
    });
    expect(refused.status).toBe(422);
    const unknown = await call('POST', '/admin/webhook-endpoints/ep_AAAAAAAAAAAAAAAA/disable');
    expect(unknown.status).toBe(404);
    // a bad X-Operator is refused before anything runs: nothing recorded
    expect(
      (await call('POST', '/admin/webhook-endpoints/ep_AAAAAAAAAAAAAAAA/enable', undefined, 'a;b'))
        .status,
    ).toBe(400);
    const entries = (await webhookEntries()).slice(before);
    expect(entries.map((e) => [e.action, e.outcome, e.result])).toEqual([
      [
        'webhook-add',
        'refused',
        { code: 'receiver-refused', message: expect.stringMatching(/must be https/) },
      ],
      [
        'webhook-disable',
        'refused',
        { code: 'unknown-webhook-endpoint', message: 'no webhook endpoint ep_AAAAAAAAAAAAAAAA' },
      ],
    ]);
  });

  it("records the CLI's changes as the CLI's, with --operator", async () => {
    const cli = async (args: string[]) => {
      const run = runCli(['webhooks', ...args, '--operator', 'ops-bot'], {
        DATABASE_URL: ns.databaseUrl,
        REDIS_URL: ns.redisUrl,
        KEY_PREFIX: ns.id,
        WEBHOOK_ALLOW_PRIVATE: 'true',
      });
      const code = await run.exited;
      expect(code, run.stderr()).toBe(0);
      return JSON.parse(run.stdout()) as { id: string; secret?: string };
    };
    const { id, secret } = await cli(['add', '--url', 'http://127.0.0.1:9/hooks/cli']);
    await cli(['disable', '--id', id]);
    const entries = await webhookEntries(id);
    expect(entries.map((e) => [e.action, e.outcome])).toEqual([
      ['webhook-add', 'done'],
      ['webhook-disable', 'done'],
    ]);
    for (const e of entries) {
      expect(e.actor).toEqual({ via: 'cli', session: expect.any(String), operator: 'ops-bot' });
    }
    expect(JSON.stringify(entries)).not.toContain(secret!);
  }, 120_000);
});
