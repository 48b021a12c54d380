/**
 * /openapi.json: a valid OpenAPI 3.1 document, and the real API answers as it says: every answer
 * below (success and problem) has a documented status and a body its schema accepts (Ajv, JSON
 * Schema 2020-12).
 */
import { createECDH, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import webPush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BULL_BOARD_PATH } from '../../src/http/routes/admin.js';
import { OPERATIONS, openApiPath } from '../../src/http/openapi/document.js';
import { signStandardWebhook, signNotice } from '../../src/http/notice-signature.js';
import { startApp, type RunningApp } from '../support/app.js';
import { waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';
import { startTestChain, type TestChain } from '../support/beacon.js';

const ns = useNamespace();
const STRIPE_SECRET = 'whsec_openapi_test_0123456789ABCDEFGH';
const WEBHOOK_SECRET = 'openapi-test-webhook-secret-0123456789';
let app: RunningApp;
let chain: TestChain;
let doc: {
  paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>>;
};

const vapid = webPush.generateVAPIDKeys();

beforeAll(async () => {
  chain = await startTestChain();
  app = await startApp(
    ns.config({
      ...chain.env,
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      // Express alone, so its router can be walked below (the fast path answers the same:
      // test/http/fast-path.test.ts)
      FAST_PATH: 'false',
      SALE_TOKEN_SECRET: 'openapi-test-sale-token-secret-0123456',
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      // Web Push on, to a push service on this machine's discard port (nothing listens there)
      VAPID_PUBLIC_KEY: vapid.publicKey,
      VAPID_PRIVATE_KEY: vapid.privateKey,
      VAPID_SUBJECT: 'mailto:openapi-test@localhost',
      PUSH_SERVICE_ORIGINS: 'http://127.0.0.1:9',
    }),
    { worker: true },
  );
  doc = (await (await fetch(`${app.url}/openapi.json`)).json()) as typeof doc;
});
afterAll(async () => {
  await app?.close();
  await chain?.close();
});

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect((doc as unknown as { openapi: string }).openapi).toBe('3.1.0');
    // the version is the package's (it said 1.0.0 while the package was 0.1.0)
    const pkg = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8'),
    );
    expect((doc as unknown as { info: { version: string } }).info.version).toBe(pkg.version);
  });

  it('the API answers as documented: statuses and bodies of every route', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema(doc, 'openapi');
    const seen: string[] = [];

    /** Calls the API and checks the answer against the document's operation. */
    async function call(
      method: string,
      template: string,
      path: string,
      o: { body?: unknown; headers?: Record<string, string>; raw?: string } = {},
    ) {
      const res = await fetch(`${app.url}${path}`, {
        method,
        headers: {
          ...(o.body !== undefined || o.raw !== undefined
            ? { 'content-type': 'application/json' }
            : {}),
          ...o.headers,
        },
        ...(o.raw !== undefined
          ? { body: o.raw }
          : o.body !== undefined && { body: JSON.stringify(o.body) }),
      });
      const op = doc.paths[template]?.[method.toLowerCase()];
      expect(op, `${method} ${template} is documented`).toBeDefined();
      const answer = op!.responses[String(res.status)] as
        { content?: Record<string, { schema: { $ref: string } }> } | undefined;
      expect(answer, `${method} ${template} answered an undocumented ${res.status}`).toBeDefined();
      // every answer carries the headers it documents (X-Request-Id always)
      const documentedHeaders = Object.keys(
        (answer as { headers?: Record<string, unknown> }).headers ?? {},
      );
      expect(documentedHeaders, `${method} ${template} ${res.status}`).toContain('X-Request-Id');
      expect(res.headers.get('x-request-id')).toBeTruthy();
      for (const h of ['Retry-After', 'Location', 'RateLimit', 'RateLimit-Policy', 'Link']) {
        if (res.headers.get(h) !== null) {
          expect(documentedHeaders, `${method} ${template} ${res.status} sent ${h}`).toContain(h);
        }
      }
      seen.push(`${method} ${template} ${res.status}`);
      if (res.status === 204) {
        expect(answer!.content, `${method} ${template} 204 has no body`).toBeUndefined();
        return { status: res.status, body: {}, headers: res.headers };
      }
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
      const media = answer!.content?.[type];
      expect(media, `${method} ${template} ${res.status} as ${type}`).toBeDefined();
      if (!type.includes('json')) {
        if (type === 'text/event-stream') await res.body?.cancel();
        else expect((await res.text()).length).toBeGreaterThan(0);
        return { status: res.status, body: {}, headers: res.headers };
      }
      const body = (await res.json()) as unknown;
      const ref = (media!.schema as { $ref?: string }).$ref;
      if (ref) {
        const validate = ajv.getSchema(`openapi${ref}`)!;
        expect(
          validate(body),
          `${method} ${path} ${res.status}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(body)}`,
        ).toBe(true);
      }
      return { status: res.status, body: body as Record<string, unknown>, headers: res.headers };
    }

    const admin = { authorization: `Bearer ${ns.adminToken}` };
    const p = `oa${randomBytes(3).toString('hex')}`;
    const user = { 'x-user-id': 'oa-alice' };
    const seed = { total: 5, strategy: 'segmented', segments: 2, payWithinSeconds: 600 };

    await call('GET', '/healthz', '/healthz');
    // ready once its first checks of Redis and PostgreSQL came back (503 until then, documented)
    await waitFor('ready', async () => (await fetch(`${app.url}/readyz`)).ok, 30_000);
    await call('GET', '/readyz', '/readyz');
    expect(
      (
        await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
          body: seed,
          headers: admin,
        })
      ).status,
    ).toBe(201);
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}?force=true`, {
      body: seed,
      headers: admin,
    });
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
      body: { total: -1 },
      headers: admin,
    });
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, { body: seed });
    await call('GET', '/products/{id}', `/products/${p}`);
    await call('GET', '/products/{id}', '/products/nope-no-such');
    await call('POST', '/products/{id}/sale-token', `/products/${p}/sale-token`, { headers: user });

    // a waiting room: join, poll (admitted or not), the refusals
    const r = `room${randomBytes(4).toString('hex')}`;
    const roomSeed = {
      strategy: 'global',
      total: 5,
      waitingRoom: { admitPerSecond: 10, maxActive: 10, admittedForSeconds: 60 },
    };
    await call('PUT', '/admin/products/{id}', `/admin/products/${r}`, {
      body: roomSeed,
      headers: admin,
    });
    await call('POST', '/products/{id}/queue', `/products/${r}/queue`, { headers: user });
    await call('GET', '/products/{id}/queue', `/products/${r}/queue`, { headers: user });
    await call('GET', '/products/{id}/queue', `/products/${r}/queue`, {
      headers: { 'x-user-id': 'never-joined' },
    });
    await call('GET', '/products/{id}/queue', '/products/bad%20id!/queue', { headers: user });
    await call('GET', '/products/{id}/queue', `/products/${r}/queue`);
    await call('POST', '/products/{id}/queue', '/products/bad%20id!/queue', { headers: user });
    await call('POST', '/products/{id}/queue', `/products/${r}/queue`);
    await call('POST', '/products/{id}/queue', '/products/nope-no-such/queue', { headers: user });
    await call('POST', '/products/{id}/sale-token', `/products/${r}/sale-token`, { headers: user });
    await call('GET', '/products/{id}/challenge', `/products/${r}/challenge`, { headers: user });
    await call('GET', '/products/{id}/challenge', '/products/nope-no-such/challenge', {
      headers: user,
    });
    await call('GET', '/admin/products/{id}/fairness', `/admin/products/${r}/fairness`, {
      headers: admin,
    });
    await call('GET', '/admin/products/{id}/fairness', '/admin/products/nope-no-such/fairness', {
      headers: admin,
    });

    // the queue page, its assets and worker, and the turn's push subscription
    await call('GET', '/queue/{id}', `/queue/${r}?lang=de`);
    await call('GET', '/queue/{id}', '/queue/bad%20id!');
    const html = await (await fetch(`${app.url}/queue/${r}`)).text();
    const script = /src="\/queue\/assets\/([^"]+)"/.exec(html)![1]!;
    await call('GET', '/queue/assets/{file}', `/queue/assets/${script}`);
    await call('GET', '/queue/assets/{file}', '/queue/assets/page.000000000000.js');
    await call('GET', '/queue/sw.js', '/queue/sw.js');
    await call('GET', '/queue/{id}/skip', `/queue/${r}/skip`, { headers: user });
    await call('GET', '/queue/{id}/skip', '/queue/bad%20id!/skip');
    const browserKey = createECDH('prime256v1');
    browserKey.generateKeys();
    const subscribe = {
      subscription: {
        endpoint: 'http://127.0.0.1:9/push/a',
        keys: { p256dh: browserKey.getPublicKey('base64url'), auth: 'AAAAAAAAAAAAAAAAAAAAAA' },
      },
      texts: { admitted: 'your turn', expiring: 'ends at {until}' },
      lang: 'en',
    };
    const pushPath = `/products/${r}/queue/push`;
    await call('POST', '/products/{id}/queue/push', pushPath, { body: subscribe, headers: user });
    await call('POST', '/products/{id}/queue/push', pushPath, {
      body: {
        ...subscribe,
        subscription: { ...subscribe.subscription, endpoint: 'https://push.example/a' },
      },
      headers: user,
    });
    await call('POST', '/products/{id}/queue/push', pushPath, { body: {}, headers: user });
    await call('POST', '/products/{id}/queue/push', pushPath, { body: subscribe });
    await call('POST', '/products/{id}/queue/push', `/products/${p}/queue/push`, {
      body: subscribe,
      headers: user,
    });
    // a draw: enter, read, withdraw, the transcript and the list, before and after the close
    const dr = `draw${randomBytes(4).toString('hex')}`;
    const drawLater = `draw${randomBytes(4).toString('hex')}`;
    const drawSeed = (openInMs: number, closeInMs: number) => ({
      strategy: 'global',
      total: 2,
      draw: {
        entriesOpenAt: new Date(Date.now() + openInMs).toISOString(),
        entriesCloseAt: new Date(Date.now() + closeInMs).toISOString(),
        buyWithinSeconds: 60,
      },
    });
    const closeAt = Date.now() + 2_000;
    await call('PUT', '/admin/products/{id}', `/admin/products/${dr}`, {
      body: drawSeed(-1_000, closeAt - Date.now()),
      headers: admin,
    });
    await call('PUT', '/admin/products/{id}', `/admin/products/${drawLater}`, {
      body: drawSeed(3_600_000, 7_200_000),
      headers: admin,
    });
    const entry = (m: string, product: string, headers: Record<string, string> = user) =>
      call(m, '/products/{id}/draw/entry', `/products/${product}/draw/entry`, { headers });
    const withdrawer = { 'x-user-id': 'withdraws' };
    for (const m of ['POST', 'POST', 'GET']) await entry(m, dr);
    await entry('POST', dr, withdrawer);
    await entry('DELETE', dr, withdrawer);
    for (const m of ['POST', 'GET', 'DELETE']) {
      await entry(m, 'bad%20id!');
      await entry(m, dr, {});
      await entry(m, 'nope-no-such');
      if (m !== 'POST') await entry(m, dr, { 'x-user-id': 'never-entered' });
    }
    await entry('POST', drawLater);
    const list = (query: string, product = dr) =>
      call('GET', '/products/{id}/draw/entries', `/products/${product}/draw/entries${query}`);
    await list('');
    await list('?limit=0');
    await list('', 'nope-no-such');
    await call('GET', '/products/{id}/draw', `/products/${dr}/draw`);
    await call('GET', '/products/{id}/draw', '/products/nope-no-such/draw');
    await call('GET', '/products/{id}/draw', '/products/bad%20id!/draw');
    await waitFor('the close', async () => Date.now() > closeAt + 100, 5_000, 50);
    await entry('POST', dr, { 'x-user-id': 'too-late' });
    await entry('DELETE', dr);
    await waitFor(
      'the freeze',
      async () => (await fetch(`${app.url}/products/${dr}/draw/entries`)).status === 200,
      10_000,
      100,
    );
    await list('?limit=1');

    const bought = await call('POST', '/seckill', '/seckill', {
      body: { productId: p },
      headers: user,
    });
    expect(bought.status).toBe(202);
    const orderId = bought.body.orderId as string;
    await call('POST', '/seckill', '/seckill', { body: { productId: p }, headers: user }); // 409
    await call('POST', '/seckill', '/seckill', { body: { productId: p, extra: 1 }, headers: user });
    await call('POST', '/seckill', '/seckill', { body: { productId: p } }); // 401
    await call('POST', '/seckill', '/seckill', {
      body: { productId: 'nope-no-such' },
      headers: user,
    });
    await call('POST', '/seckill', '/seckill', { raw: '{"productId":', headers: user });

    await call('GET', '/orders/{id}', `/orders/${orderId}`, { headers: user });
    await call('GET', '/orders/{id}', `/orders/${orderId}`, { headers: { 'x-user-id': 'oa-bob' } });
    const intent = await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, {
      body: {},
      headers: user,
    });
    expect(intent.status).toBe(201);
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, { headers: user }); // 200
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, {
      body: { paymentId: 'oa-1' },
      headers: user,
    });
    const paid = JSON.stringify({
      type: 'payment.succeeded',
      orderId,
      paymentIntentId: intent.body.paymentIntentId,
      paymentId: 'oa-1',
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: paid,
      headers: signStandardWebhook(`msg_${orderId}`, paid, WEBHOOK_SECRET),
    });
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`, { headers: user }); // 409
    await call('POST', '/orders/{id}/cancel', `/orders/${orderId}/cancel`, { headers: user });

    const second = await call('POST', '/seckill', '/seckill', {
      body: { productId: p },
      headers: { 'x-user-id': 'oa-carol' },
    });
    const other = second.body.orderId as string;
    const carol = { 'x-user-id': 'oa-carol' };
    const started = await call('POST', '/orders/{id}/pay', `/orders/${other}/pay`, {
      headers: carol,
    });
    await call('POST', '/orders/{id}/cancel', `/orders/${other}/cancel`, { headers: carol });
    const note = JSON.stringify({
      type: 'payment.succeeded',
      orderId: other,
      paymentIntentId: started.body.paymentIntentId,
      paymentId: 'oa-3',
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: note,
      headers: { 'seckill-signature': signNotice(note, WEBHOOK_SECRET) },
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: note,
      headers: { 'seckill-signature': 't=1,v1=00' },
    });

    await call('GET', '/admin/products/{id}', `/admin/products/${p}`, { headers: admin });
    await call('POST', '/admin/products/{id}/reconcile', `/admin/products/${p}/reconcile`, {
      headers: admin,
    });
    await call('GET', '/admin/products/{id}', '/admin/products/nope-no-such', { headers: admin });
    // the order feed: a page, a bad query, the events and a bad cursor
    const listed = await call('GET', '/admin/orders', `/admin/orders?product=${p}&limit=1`, {
      headers: admin,
    });
    expect((listed.body.orders as unknown[]).length).toBe(1);
    await call('GET', '/admin/orders', '/admin/orders?status=shipped', { headers: admin });
    await call('GET', '/admin/orders', '/admin/orders');
    await call('GET', '/admin/events', '/admin/events');
    const events = await call('GET', '/admin/events', '/admin/events?limit=5', { headers: admin });
    expect((events.body.events as unknown[]).length).toBeGreaterThan(0);
    await call('GET', '/admin/events', `/admin/events?after=${String(events.body.next)}`, {
      headers: admin,
    });
    await call('GET', '/admin/events', '/admin/events?after=nope', { headers: admin });
    const audit = await call('GET', '/admin/audit', `/admin/audit?productId=${p}&limit=1`, {
      headers: admin,
    });
    expect(audit.headers.get('link')).toMatch(/^<\/admin\/audit\?.*after=\d+>; rel="next"$/);
    await call('GET', '/admin/audit', `/admin/audit?after=${String(audit.body.next)}`, {
      headers: admin,
    });
    await call('GET', '/admin/audit', '/admin/audit?limit=0', { headers: admin });
    await call('GET', '/admin/audit', '/admin/audit');
    // no JWT_JWKS_URL here: nothing to fetch again (409); a bad name first is a 400
    const refresh = '/admin/jwks/refresh';
    await call('POST', refresh, refresh, { headers: admin });
    await call('POST', refresh, refresh, { headers: { ...admin, 'x-operator': 'semi;colon' } });
    await call('POST', refresh, refresh);
    // webhook endpoints: register (and refusals), list, disable, enable, rotate, retry, replay,
    // dead letters
    const hook = { url: 'https://warehouse.example/hooks', events: ['order.paid'] };
    const ep = await call('POST', '/admin/webhook-endpoints', '/admin/webhook-endpoints', {
      body: hook,
      headers: admin,
    });
    expect(ep.status).toBe(201);
    const epPath = `/admin/webhook-endpoints/${String(ep.body.id)}`;
    await call('POST', '/admin/webhook-endpoints', '/admin/webhook-endpoints', {
      body: { ...hook, url: 'http://127.0.0.1/hooks' },
      headers: admin,
    });
    await call('POST', '/admin/webhook-endpoints', '/admin/webhook-endpoints', {
      body: { url: 'x' },
      headers: admin,
    });
    await call('GET', '/admin/webhook-endpoints', '/admin/webhook-endpoints', { headers: admin });
    for (const action of ['disable', 'enable', 'rotate']) {
      const template = `/admin/webhook-endpoints/{id}/${action}`;
      await call('POST', template, `${epPath}/${action}`, { headers: admin });
      await call('POST', template, `/admin/webhook-endpoints/ep_nope/${action}`, {
        headers: admin,
      });
    }
    const retryPath = '/admin/webhook-endpoints/{id}/retry';
    await call('POST', retryPath, `${epPath}/retry`, { headers: admin });
    await call('POST', retryPath, '/admin/webhook-endpoints/ep_nope/retry', { headers: admin });
    await call('POST', '/admin/webhook-endpoints/{id}/disable', `${epPath}/disable`, {
      headers: admin,
    });
    await call('POST', retryPath, `${epPath}/retry`, { headers: admin });
    await call('POST', '/admin/webhook-endpoints/{id}/enable', `${epPath}/enable`, {
      headers: admin,
    });
    const replayPath = '/admin/webhook-endpoints/{id}/replay';
    await call('POST', replayPath, `${epPath}/replay`, { body: { from: '0.0' }, headers: admin });
    await call('POST', replayPath, `${epPath}/replay`, { body: { from: 'x' }, headers: admin });
    await call('POST', replayPath, '/admin/webhook-endpoints/ep_nope/replay', {
      body: { from: '0.0' },
      headers: admin,
    });
    const deadPath = '/admin/webhook-endpoints/{id}/dead-letters';
    await call('GET', deadPath, `${epPath}/dead-letters`, { headers: admin });
    await call('GET', deadPath, `${epPath}/dead-letters?limit=0`, { headers: admin });
    await call('GET', deadPath, '/admin/webhook-endpoints/ep_nope/dead-letters', {
      headers: admin,
    });
    const webhookCalls = [
      ['POST', '/admin/webhook-endpoints', '/admin/webhook-endpoints'],
      ['GET', '/admin/webhook-endpoints', '/admin/webhook-endpoints'],
      ['POST', '/admin/webhook-endpoints/{id}/disable', `${epPath}/disable`],
      ['POST', '/admin/webhook-endpoints/{id}/enable', `${epPath}/enable`],
      ['POST', '/admin/webhook-endpoints/{id}/rotate', `${epPath}/rotate`],
      ['POST', replayPath, `${epPath}/replay`],
      ['POST', retryPath, `${epPath}/retry`],
      ['GET', deadPath, `${epPath}/dead-letters`],
    ] as const;
    for (const [m, template, path] of webhookCalls) {
      await call(m, template, path, m === 'POST' ? { body: {} } : {});
    }
    // a change names its operator for the audit log: a name that is not one is a 400
    for (const action of ['disable', 'enable', 'rotate']) {
      await call('POST', `/admin/webhook-endpoints/{id}/${action}`, `${epPath}/${action}`, {
        headers: { ...admin, 'x-operator': 'semi;colon' },
      });
    }
    // the drop's controls, on a sale of their own
    const d = `drop${randomBytes(3).toString('hex')}`;
    await call('PUT', '/admin/products/{id}', `/admin/products/${d}`, {
      body: seed,
      headers: admin,
    });
    const ctl = (action: string, path = `/admin/products/${d}/${action}`, o = {}) =>
      call('POST', `/admin/products/{id}/${action}`, path, { headers: admin, ...o });
    await ctl('pause');
    await ctl('pause', `/admin/products/nope-no-such/pause`);
    await ctl('pause', `/admin/products/${d}/pause`, {
      headers: { ...admin, 'x-operator': 'semi;colon' },
    });
    await ctl('resume');
    await ctl('units', undefined, { body: { add: 2 } });
    await ctl('units', undefined, { body: { withdraw: 100 } });
    await ctl('units', undefined, { body: { add: 0 } });
    await ctl('units', '/admin/products/nope-no-such/units', { body: { add: 1 } });
    const pace = (path: string, body: unknown) =>
      call('PATCH', '/admin/products/{id}/waiting-room', path, { headers: admin, body });
    await pace(`/admin/products/${r}/waiting-room`, { admitPerSecond: 20 });
    await pace(`/admin/products/${d}/waiting-room`, { admitPerSecond: 20 });
    await pace(`/admin/products/${d}/waiting-room`, {});
    await pace('/admin/products/nope-no-such/waiting-room', { maxActive: 2 });
    await ctl('end');
    // over: every control is refused 409
    for (const action of ['end', 'pause', 'resume']) await ctl(action);
    await ctl('units', undefined, { body: { add: 1 } });
    await ctl('resume', '/admin/products/nope-no-such/resume');
    await ctl('end', '/admin/products/nope-no-such/end');
    await ctl('resume', `/admin/products/bad%20id!/resume`);
    await ctl('end', `/admin/products/bad%20id!/end`);
    await ctl('units', `/admin/products/bad%20id!/units`, { body: { add: 1 } });
    await pace(`/admin/products/bad%20id!/waiting-room`, { maxActive: 2 });
    for (const action of ['pause', 'resume', 'end', 'units']) {
      await call('POST', `/admin/products/{id}/${action}`, `/admin/products/${d}/${action}`);
    }
    await call('PATCH', '/admin/products/{id}/waiting-room', `/admin/products/${d}/waiting-room`);

    // refusals every caller meets: no identity, a wrong token, nothing there, a bad body
    const wrong = { authorization: 'Bearer not-the-admin-token-at-all' };
    const none = '00000000-0000-8000-8000-000000000000';
    await call('GET', '/orders/{id}', `/orders/${orderId}`);
    await call('POST', '/orders/{id}/pay', `/orders/${orderId}/pay`);
    await call('POST', '/orders/{id}/pay', `/orders/${none}/pay`, { headers: user });
    await call('POST', '/orders/{id}/cancel', `/orders/${orderId}/cancel`);
    await call('POST', '/orders/{id}/cancel', `/orders/${none}/cancel`, { headers: user });
    await call('GET', '/products/{id}', '/products/bad%20id!');
    await call('POST', '/products/{id}/sale-token', '/products/bad%20id!/sale-token', {
      headers: user,
    });
    await call('POST', '/products/{id}/sale-token', `/products/${p}/sale-token`);
    await call('POST', '/products/{id}/sale-token', '/products/nope-no-such/sale-token', {
      headers: user,
    });
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
      body: seed,
      headers: admin,
    }); // 409: live
    await call('GET', '/admin/products/{id}', `/admin/products/${p}`);
    await call('POST', '/admin/products/{id}/reconcile', `/admin/products/${p}/reconcile`);
    await call('GET', '/admin/products/{id}/fairness', `/admin/products/${p}/fairness`);
    await call('GET', '/products/{id}/challenge', `/products/${p}/challenge`);
    await call('GET', '/products/{id}/challenge', '/products/bad%20id!/challenge', {
      headers: user,
    });
    await call('POST', '/admin/products/{id}/reconcile', '/admin/products/nope-no-such/reconcile', {
      headers: admin,
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: '{"type":',
      headers: { 'seckill-signature': signNotice('{"type":', WEBHOOK_SECRET) },
    });
    const unknownIntent = JSON.stringify({
      type: 'payment.succeeded',
      orderId: none,
      paymentIntentId: `pi_${'A'.repeat(22)}`,
      paymentId: 'oa-9',
    });
    await call('POST', '/payments/webhook', '/payments/webhook', {
      raw: unknownIntent,
      headers: { 'seckill-signature': signNotice(unknownIntent, WEBHOOK_SECRET) },
    });
    // Stripe's event: another type (200), no intent started (404), a cancelled order (409),
    // malformed (400), unsigned (401)
    const stripe = (event: unknown) => {
      const raw = JSON.stringify(event);
      return { raw, headers: { 'stripe-signature': signNotice(raw, STRIPE_SECRET) } };
    };
    const succeededFor = (orderId: string, metadata: Record<string, string> = {}) => ({
      id: `evt_oa${randomBytes(4).toString('hex')}`,
      type: 'payment_intent.succeeded',
      data: {
        object: { id: 'pi_oa1', amount: 1, currency: 'eur', metadata: { orderId, ...metadata } },
      },
    });
    await call(
      'POST',
      '/payments/stripe',
      '/payments/stripe',
      stripe({
        id: 'evt_oa0',
        type: 'charge.refunded',
        data: { object: { id: 'ch_1' } },
      }),
    );
    await call('POST', '/payments/stripe', '/payments/stripe', stripe(succeededFor(none)));
    await call(
      'POST',
      '/payments/stripe',
      '/payments/stripe',
      stripe(
        succeededFor(other, {
          paymentIntentId: String(started.body.paymentIntentId),
        }),
      ),
    );
    await call('POST', '/payments/stripe', '/payments/stripe', stripe({ id: 'evt_oa1', data: 1 }));
    await call('POST', '/payments/stripe', '/payments/stripe', { raw: '{}' });
    // a sale not started, one ended, one that needs a sale token, a key reused for another body
    const later = `oa${randomBytes(3).toString('hex')}`;
    const over = `oa${randomBytes(3).toString('hex')}`;
    const gated = `oa${randomBytes(3).toString('hex')}`;
    const hour = 3_600_000;
    for (const [id, extra] of [
      [later, { startsAt: new Date(Date.now() + hour).toISOString() }],
      [
        over,
        {
          startsAt: new Date(Date.now() - 2 * hour).toISOString(),
          endsAt: new Date(Date.now() - hour).toISOString(),
        },
      ],
      [gated, { requireSaleToken: true }],
    ] as const) {
      await call('PUT', '/admin/products/{id}', `/admin/products/${id}`, {
        body: { total: 5, strategy: 'lockfree', segments: 1, ...extra },
        headers: admin,
      });
    }
    await call('POST', '/seckill', '/seckill', { body: { productId: later }, headers: user });
    await call('POST', '/seckill', '/seckill', { body: { productId: over }, headers: user });
    await call('POST', '/seckill', '/seckill', { body: { productId: gated }, headers: user });
    await call('POST', '/products/{id}/sale-token', `/products/${later}/sale-token`, {
      headers: user,
    });
    await call('POST', '/products/{id}/sale-token', `/products/${over}/sale-token`, {
      headers: user,
    });
    const keyed = {
      'x-user-id': 'oa-dave',
      'idempotency-key': `oa-key-${randomBytes(3).toString('hex')}`,
    };
    await call('POST', '/seckill', '/seckill', { body: { productId: p }, headers: keyed });
    await call('POST', '/seckill', '/seckill', {
      body: { productId: p, quantity: 2 },
      headers: keyed,
    }); // 422: another body
    // every route that reads a body: too large (413), not JSON (415)
    for (const op of OPERATIONS.filter((o) => o.body)) {
      const path = openApiPath(op.route).replace(
        '{id}',
        op.route.startsWith('/orders') ? orderId : p,
      );
      const headers = op.route.startsWith('/admin/products') ? admin : user;
      await call(op.method.toUpperCase(), openApiPath(op.route), path, {
        raw: JSON.stringify({ pad: 'x'.repeat(64 * 1024) }),
        headers,
      });
      await call(op.method.toUpperCase(), openApiPath(op.route), path, {
        raw: 'plain words',
        headers: { ...headers, 'content-type': 'text/plain' },
      });
    }

    // the dashboard, its stream, Bull Board, the reference page and this document
    await call('GET', '/admin/dashboard', '/admin/dashboard');
    // a browser request another site started: the admin surface refuses it (403)
    const crossSite = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' };
    await call('GET', '/admin/dashboard', '/admin/dashboard', { headers: crossSite });
    for (const path of ['/admin/dashboard/login', '/admin/dashboard/logout']) {
      await call('POST', path, path, { headers: crossSite, body: { token: ns.adminToken } });
    }
    await call('POST', '/admin/dashboard/login', '/admin/dashboard/login', {
      body: { token: 'not-the-admin-token' },
    });
    await call('POST', '/admin/dashboard/login', '/admin/dashboard/login', { body: { tok: 1 } });
    const login = await call('POST', '/admin/dashboard/login', '/admin/dashboard/login', {
      body: { token: ns.adminToken },
    });
    expect(login.status).toBe(204);
    const cookie = login.headers
      .getSetCookie()
      .find((c) => c.startsWith('seckill_admin='))!
      .split(';')[0]!;
    await call('GET', '/admin/dashboard/stream', '/admin/dashboard/stream');
    await call('GET', '/admin/dashboard/stream', '/admin/dashboard/stream', {
      headers: { cookie },
    });
    await call('GET', '/admin/queues', '/admin/queues');
    await call('GET', '/admin/queues', '/admin/queues', { headers: wrong });
    await call('GET', '/admin/dashboard/stream', '/admin/dashboard/stream', { headers: wrong });
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
      body: seed,
      headers: wrong,
    });
    await call('GET', '/admin/products/{id}', `/admin/products/${p}`, { headers: wrong });
    await call('POST', '/admin/products/{id}/reconcile', `/admin/products/${p}/reconcile`, {
      headers: wrong,
    });
    await call('GET', '/admin/orders', '/admin/orders', { headers: wrong });
    await call('GET', '/admin/events', '/admin/events', { headers: wrong });
    await call('GET', '/admin/audit', '/admin/audit', { headers: wrong });
    await call('POST', refresh, refresh, { headers: wrong });
    for (const [m, template, path] of webhookCalls.slice(0, 2)) {
      await call(m, template, path, { headers: wrong, ...(m === 'POST' && { body: {} }) });
    }
    // past ADMIN_GUESS_LIMIT wrong tokens from one address: 429 with Retry-After, everywhere
    for (let i = 0; i < 12; i++) {
      await fetch(`${app.url}/admin/products/${p}`, { headers: wrong });
    }
    await call('PUT', '/admin/products/{id}', `/admin/products/${p}`, {
      body: seed,
      headers: wrong,
    });
    await call('GET', '/admin/products/{id}', `/admin/products/${p}`, { headers: wrong });
    await call('POST', '/admin/products/{id}/reconcile', `/admin/products/${p}/reconcile`, {
      headers: wrong,
    });
    await call('GET', '/admin/products/{id}/fairness', `/admin/products/${p}/fairness`, {
      headers: wrong,
    });
    await call('GET', '/admin/orders', '/admin/orders', { headers: wrong });
    await call('GET', '/admin/events', '/admin/events', { headers: wrong });
    await call('GET', '/admin/audit', '/admin/audit', { headers: wrong });
    await call('POST', refresh, refresh, { headers: wrong });
    for (const [m, template, path] of webhookCalls) {
      await call(m, template, path, { headers: wrong, ...(m === 'POST' && { body: {} }) });
    }
    for (const action of ['pause', 'resume', 'end', 'units']) {
      await call('POST', `/admin/products/{id}/${action}`, `/admin/products/${p}/${action}`, {
        headers: wrong,
      });
    }
    await call('PATCH', '/admin/products/{id}/waiting-room', `/admin/products/${p}/waiting-room`, {
      headers: wrong,
    });
    await call('POST', '/admin/dashboard/login', '/admin/dashboard/login', {
      body: { token: 'not-the-admin-token' },
    });
    await call('GET', '/admin/queues', '/admin/queues', { headers: { cookie } });
    await call('POST', '/admin/dashboard/logout', '/admin/dashboard/logout', {
      headers: { cookie },
    });
    await call('GET', '/docs', '/docs');
    await call('GET', '/docs/init.js', '/docs/init.js');
    await call('GET', '/openapi.json', '/openapi.json');
    await call('GET', '/metrics', '/metrics');
    const icon = await call('GET', '/favicon.ico', '/favicon.ico');
    expect(icon.status).toBe(204);

    // every documented operation was called at least once
    const called = new Set(seen.map((s) => s.split(' ').slice(0, 2).join(' ')));
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.filter((d) => !called.has(d))).toEqual([]);

    // and every documented answer was produced, here or by the test named for it
    const produced = new Set(seen);
    const missing = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([m, op]) =>
        Object.keys(op.responses)
          .filter((status) => status !== 'default')
          .map((status) => `${m.toUpperCase()} ${path} ${status}`)
          .filter((answer) => !produced.has(answer)),
      ),
    );
    const unexplained = missing.filter((a) => !producedElsewhere(a));
    expect(unexplained).toEqual([]);
  });

  it('documents exactly the routes the app mounts (walked from its Express router)', () => {
    const listener = app.server.listeners('request')[0] as unknown as { inner?: unknown };
    // server.ts's bound on unread bodies wraps the app
    const express = (listener.inner ?? listener) as {
      router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> };
    };
    const mounted = express.router.stack
      .filter((l) => l.route)
      .flatMap((l) =>
        Object.keys(l.route!.methods)
          .filter((m) => m !== '_all')
          .map((m) => `${m.toUpperCase()} ${openApiPath(l.route!.path)}`),
      )
      .sort();
    const documented = OPERATIONS.filter((o) => o.route !== BULL_BOARD_PATH) // a sub-app, mounted with use()
      .map((o) => `${o.method.toUpperCase()} ${openApiPath(o.route)}`)
      .sort();
    expect(mounted).toEqual(documented);
    // and the document is that table: operationIds unique, every operation tagged
    const ids = OPERATIONS.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const paths = Object.values(doc.paths).flatMap((ops) => Object.values(ops));
    expect(paths).toHaveLength(OPERATIONS.length);
  });

  it('every operation has an operationId, tags, a default problem answer and X-Request-Id', () => {
    const full = doc as unknown as {
      servers: unknown[];
      tags: Array<{ name: string }>;
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    expect(full.servers.length).toBeGreaterThan(0);
    const tagNames = full.tags.map((t) => t.name);
    for (const [path, ops] of Object.entries(full.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        const what = `${m} ${path}`;
        expect(op.operationId, what).toMatch(/^[a-z][A-Za-z]+$/);
        for (const t of op.tags as string[]) expect(tagNames, what).toContain(t);
        const responses = op.responses as Record<string, { headers?: Record<string, unknown> }>;
        expect(responses.default, what).toBeDefined();
        for (const [status, r] of Object.entries(responses)) {
          expect(Object.keys(r.headers ?? {}), `${what} ${status}`).toContain('X-Request-Id');
        }
        if (op.requestBody) {
          expect(Object.keys(responses), what).toEqual(expect.arrayContaining(['413', '415']));
        }
      }
    }
  });
});

/**
 * Answers the document promises that this file does not make, each with the test that does (or
 * why it cannot be made here). Keeping this list short and true is part of the check.
 */
function producedElsewhere(answer: string): string | undefined {
  const [, path, status] = answer.split(' ') as [string, string, string];
  if (status === '422' && path === '/admin/products/{id}')
    return 'test/http/shop-http.test.ts: requireSaleToken without SALE_TOKEN_SECRET (set here)';
  if (status === '403' && path.startsWith('/admin/webhook-endpoints'))
    return 'test/events/webhooks.test.ts: a wrong admin token (past ADMIN_GUESS_LIMIT here: 429)';
  if (['200', '503'].includes(status) && path === '/admin/jwks/refresh')
    return 'test/http/jwks.test.ts: a refresh with JWT_JWKS_URL set (here none), and the provider away';
  if (status === '410' && path === '/admin/events')
    return 'test/events/order-events.test.ts: a cursor older than the retention';
  if (status === '503' && path === '/readyz')
    return 'test/project/launcher.test.ts: a Redis that does not answer; test/http/http.test.ts: draining';
  if (status === '503' && path === '/payments/webhook')
    return 'test/orders/payment-notices.test.ts: webhook-disabled (no PAYMENT_WEBHOOK_SECRET)';
  if (status === '503' && ['/orders/{id}/pay', '/orders/{id}/cancel'].includes(path))
    return 'test/orders/payments.test.ts: still settling (a spill mid-flight), or a store away';
  if (status === '503' && path === '/products/{id}/queue')
    return "test/inventory/redis-memory.test.ts: a join while the room's Redis is at its maxmemory (room-store-full); test/inventory/store-faults.test.ts: Redis away";
  if (status === '503')
    return 'test/inventory/store-faults.test.ts, test/http/shop-faults.test.ts: Redis / PostgreSQL away (store-unavailable); test/http/overload.exclusive.test.ts: overloaded';
  if (status === '429' && path === '/orders/{id}')
    return "test/http/admin-auth.test.ts: an admin's order read counts a wrong bearer as a guess; test/services/admission.test.ts: RATE_LIMIT_ORDERS";
  if (status === '429' && ['/orders/{id}/pay', '/orders/{id}/cancel'].includes(path))
    return 'test/services/admission.test.ts: RATE_LIMIT_ORDERS';
  if (status === '409' && path === '/products/{id}/sale-token')
    return 'test/http/shop-http.test.ts: a sale that needs no token, where SALE_TOKEN_SECRET is not set';
  if (
    status === '403' &&
    /^\/admin\/products\/\{id\}\/(pause|resume|end|units|waiting-room)$/.test(path)
  )
    return 'test/services/drop-controls.test.ts: a wrong admin token (here the address is past its guesses)';
  if (
    (['403', '425'].includes(status) && path === '/products/{id}/queue') ||
    (['200', '429'].includes(status) && path === '/products/{id}/challenge') ||
    (status === '403' && path === '/admin/products/{id}/fairness')
  )
    return 'test/fairness/door.test.ts: a join refused at the door (challenge-*), a challenge issued, one spaced, a report asked with a wrong admin token';
  if (status === '403' && path === '/products/{id}/draw/entry')
    return "test/fairness/product-challenge.test.ts: a draw's entry refused at the product's door (challenge-*)";
  if (status === '429' && path === '/products/{id}/queue')
    return 'test/services/waiting-room.test.ts: joins over RATE_LIMIT_USER, polls over RATE_LIMIT_POLL_IP';
  if (status === '429' && path === '/products/{id}/queue/push')
    return "test/services/waiting-room.test.ts: the join's own limits (RATE_LIMIT_USER's queue bucket), which a push subscription takes too";
  if (status === '429' && path.startsWith('/products/{id}/draw/entry'))
    return 'test/services/draw.test.ts: entries over RATE_LIMIT_USER, reads over RATE_LIMIT_POLL_IP';
  if (status === '409' && path === '/products/{id}/queue')
    return 'test/services/waiting-room.test.ts: a join past ROOM_MAX_PLACES (room-full)';
  if (status === '429' && (path === '/seckill' || path === '/products/{id}/sale-token'))
    return 'test/services/admission.test.ts: RATE_LIMIT_USER / RATE_LIMIT_IP (off in this app)';
  return undefined;
}
