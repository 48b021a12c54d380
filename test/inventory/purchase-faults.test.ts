/**
 * Purchases whose answer is lost, and Idempotency-Key records that must not lie: a lost Redis
 * reply (through a proxy that drops it), a process that died mid-request (a record left running),
 * transient refusals, and fingerprints of the parsed request. Every case checks the stock: no
 * unit is sold twice and none is lost.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deduct } from '../../src/inventory/sale/protocol.js';
import { homeSegment, IdempotencyStore } from '../../src/inventory/index.js';
import { Keys } from '../../src/redis/keys.js';
import { requestFingerprint } from '../../src/services/index.js';
import { startApp, type RunningApp } from '../support/app.js';
import { sleep } from '../support/locks.js';
import { outboxEntriesOf } from '../support/orders.js';
import { useNamespace } from '../support/namespace.js';
import { replyLosingProxy, type ReplyLosingProxy } from '../support/proxy.js';
import { orderSold } from '../support/sale.js';
import { STATE_FIELD } from '../../src/inventory/records/hash-fields.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
let proxy: ReplyLosingProxy;
let app: RunningApp;

beforeAll(async () => {
  proxy = await replyLosingProxy(Number(new URL(ns.redisUrl).port));
  app = await startApp(
    ns.config({
      REDIS_URL: proxy.url,
      REDIS_COMMAND_TIMEOUT_MS: '500',
      IDEMPOTENCY_LEASE_MS: '1000',
    }),
  );
});
afterAll(async () => {
  await app.close();
  await proxy.close();
});

const newProduct = () => `p${randomBytes(4).toString('hex')}`;

const seed = (productId: string, body: Record<string, unknown>) =>
  seedSale(app.url, productId, body);

interface Answer {
  status: number;
  body: Record<string, unknown>;
  replayed: boolean;
}

async function buy(user: string, body: unknown, key?: string): Promise<Answer> {
  const res = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': user,
      ...(key && { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
    // the old code never answered a lost reply: fail instead of hanging the suite
    signal: AbortSignal.timeout(30_000),
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    replayed: res.headers.get('idempotent-replayed') === 'true',
  };
}

/** Units left, and sales recorded in the outboxes, straight from Redis. */
async function facts(productId: string, segments: number) {
  let stock = 0;
  let outbox = 0;
  for (let i = 0; i < segments; i++) {
    const k = keys.segment(productId, i);
    stock += Number(await app.rt.redis.hget(k.state, STATE_FIELD.stock));
    outbox += await app.rt.redis.xlen(k.outbox);
  }
  return { stock, outbox };
}

/**
 * The next deduct of `productId` (home mode) reaches Redis, runs, and its reply is lost with its
 * connection, as TCP loses replies (a reply dropped from a connection that lives on would hand
 * every later reply on it to the wrong command until the timeout). The match is the deduct
 * itself, by its segment state key and its "home" mode argument: a bare "home" also matched the
 * order queue's enqueue of the sale before (its job data names the homeSegment), whose reply was
 * then lost instead, and the deduct answered 202.
 */
const loseTheNextDeductReply = (productId: string) =>
  proxy.loseReplyTo(
    (command) =>
      /evalsha/i.test(command) &&
      command.includes(`{${productId}:`) &&
      command.includes(':state\r\n') &&
      command.includes('\r\n$4\r\nhome\r\n'),
    { thenClose: true },
  );

describe('a lost Redis reply', () => {
  it('answers 503 with the order id when the reply is lost with its connection; a retry with the key answers that sale, and nothing is sold twice (limit 5)', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, strategy: 'lockfree', segments: 2, limitPerUser: 5 });
    expect((await buy('warm-up', { productId }, 'k-warm-up')).status).toBe(202); // scripts loaded
    loseTheNextDeductReply(productId);
    const first = await buy('lost', { productId }, 'k-lost');
    expect(proxy.lost).toBe(1);
    expect(first.status).toBe(503);
    expect(first.body.type).toBe('urn:seckill:problem:store-unavailable');
    const orderId = first.body.orderId as string;
    expect(first.body.detail).toBe(
      `the purchase may or may not have sold (order ${orderId}): retry with the same ` +
        `Idempotency-Key, or GET /orders/${orderId}, to learn which; it is never bought twice`,
    );
    expect(orderId).toMatch(/^[0-9a-f-]{36}$/);
    // the deduct ran: the unit is sold, once
    expect(await facts(productId, 2)).toEqual({ stock: 8, outbox: 2 });

    const retry = await buy('lost', { productId }, 'k-lost');
    expect(retry.status).toBe(202);
    expect(retry.body.orderId).toBe(orderId);
    expect(retry.replayed).toBe(true);
    const again = await buy('lost', { productId }, 'k-lost');
    expect(again.status).toBe(202);
    expect(again.body.orderId).toBe(orderId);
    // limit 5 would allow another unit: the key must not have been freed by the 503
    expect(await facts(productId, 2)).toEqual({ stock: 8, outbox: 2 });
  });

  it('without a key, the retry learns the sale from the limit (limit 1)', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 1 });
    expect((await buy('warm-up', { productId })).status).toBe(202);
    loseTheNextDeductReply(productId);
    const first = await buy('nokey', { productId });
    expect(first.status).toBe(503);
    // no key was sent: no advice to retry "with the same Idempotency-Key"
    expect(first.body.detail).toBe(
      `the purchase may or may not have sold (order ${first.body.orderId}): GET /orders/` +
        `${first.body.orderId} to learn which before buying again (a purchase sent with an ` +
        'Idempotency-Key can simply be retried)',
    );
    const retry = await buy('nokey', { productId });
    expect(retry.status, JSON.stringify(retry.body)).toBe(409);
    expect(retry.body).toMatchObject({
      type: 'urn:seckill:problem:limit-reached',
      orderId: first.body.orderId,
    });
    expect(await facts(productId, 1)).toEqual({ stock: 3, outbox: 2 });
  });
});

/**
 * The next keyed deduct of `productId` (lua/deductKeyed-10.lua: the home segment's state and the
 * key's record in one call) reaches Redis, runs, and its reply is lost with its connection. Only
 * the folded call names both: before it, the claim, the deduct and the settle were three calls.
 */
const loseTheNextKeyedDeductReply = (productId: string) =>
  proxy.loseReplyTo(
    (command) =>
      /evalsha/i.test(command) &&
      command.includes(`{${productId}:`) &&
      command.includes(':state\r\n') &&
      command.includes(':idem:'),
    { thenClose: true },
  );

describe('a lost reply of the keyed deduct (the record written in the same call)', () => {
  it('a sale at home: the retry replays it from the record the call wrote; sold once (limit 5)', async () => {
    const productId = newProduct();
    await seed(productId, { total: 10, strategy: 'lockfree', segments: 2, limitPerUser: 5 });
    expect((await buy('warm-up', { productId }, 'k-warm-up')).status).toBe(202); // script loaded
    loseTheNextKeyedDeductReply(productId);
    const lostBefore = proxy.lost;
    const first = await buy('folded', { productId }, 'k-folded');
    expect(proxy.lost - lostBefore).toBe(1);
    expect(first.status).toBe(503);
    expect(first.body.type).toBe('urn:seckill:problem:store-unavailable');
    const orderId = first.body.orderId as string;
    expect(await facts(productId, 2)).toEqual({ stock: 8, outbox: 2 });
    for (let i = 0; i < 2; i++) {
      const retry = await buy('folded', { productId }, 'k-folded');
      expect(retry).toMatchObject({ status: 202, replayed: true, body: { orderId } });
    }
    expect(await facts(productId, 2)).toEqual({ stock: 8, outbox: 2 });
    expect(await outboxEntriesOf(app.rt.redis, keys, { productId, segments: 2, orderId })).toBe(1);
  });

  it('a spill claim at home: the running record it wrote is marked unknown, the retry never sells it twice', async () => {
    const productId = newProduct();
    // segment 0 holds the unit, segment 1 none: a shopper of segment 1 spills
    await seed(productId, { total: 1, strategy: 'lockfree', segments: 2, limitPerUser: 5 });
    let user = 'spiller';
    while (homeSegment(user, 2) !== 1) user = `spiller-${randomBytes(3).toString('hex')}`;
    loseTheNextKeyedDeductReply(productId);
    const lostBefore = proxy.lost;
    const first = await buy(user, { productId }, 'k-spilled');
    expect(proxy.lost - lostBefore).toBe(1);
    expect(first.status).toBe(503);
    const orderId = first.body.orderId as string;
    // the call put the spill claim and the running record; nothing was sold
    const home = keys.segment(productId, 1);
    expect(await app.rt.redis.hget(home.claims, user)).toMatch(new RegExp(`^${orderId}\\|`));
    const place = keys.idempotency(productId, 1, user);
    const member = createHash('sha256').update('k-spilled').digest('base64url');
    const stored = JSON.parse((await app.rt.redis.get(place.record(member)))!) as object;
    expect(stored).toMatchObject({ o: orderId, u: 1 });
    expect(await facts(productId, 2)).toEqual({ stock: 1, outbox: 0 });
    // the retry resolves the order at once: its claim is still open, so it is pending, not run
    const retry = await buy(user, { productId }, 'k-spilled');
    expect(retry.status).toBe(503);
    expect(retry.body.orderId).toBe(orderId);
    expect(await facts(productId, 2)).toEqual({ stock: 1, outbox: 0 });
  });
});

describe('a request whose process died (its record left running)', () => {
  const store = () =>
    new IdempotencyStore(app.rt.redis, keys, app.rt.inventory.catalogue, 600, 1_000);
  const fp = (productId: string) => requestFingerprint({ productId, quantity: 1 });

  it('a retry after the lease answers the sale the dead request made, under its order id', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'segmented', segments: 2 });
    const orderId = randomUUID();
    const begun = await store().begin('dead', 'k-dead', {
      fp: fp(productId),
      orderId,
      productId,
      quantity: 1,
    });
    expect(begun.kind).toBe('new');
    // the dead process had sold (the deduct ran) and never stored its answer
    await orderSold(
      app.rt.inventory.sale.purchase({ productId, userId: 'dead', quantity: 1, orderId }),
    );
    const early = await buy('dead', { productId }, 'k-dead');
    expect(early.status).toBe(409); // its lease still runs
    // the scenario: its lease runs out
    await sleep(1_100);
    const retry = await buy('dead', { productId }, 'k-dead');
    expect(retry.status).toBe(202);
    expect(retry.body.orderId).toBe(orderId);
    expect(await facts(productId, 2)).toEqual({ stock: 4, outbox: 1 });
  });

  it('a retry after the lease of a request that sold nothing buys once, and the dead order can never sell late', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 2, limitPerUser: 3 });
    const orderId = randomUUID();
    await store().begin('ghost', 'k-ghost', {
      fp: fp(productId),
      orderId,
      productId,
      quantity: 1,
    });
    // the scenario: its lease runs out
    await sleep(1_100);
    const retry = await buy('ghost', { productId }, 'k-ghost');
    expect(retry.status).toBe(202);
    expect(retry.body.orderId).not.toBe(orderId);
    // the dead request's deduct arrives late: refused, nothing sold
    const seg = homeSegment('ghost', 2);
    const late = await deduct(app.rt.redis, keys.segment(productId, seg), {
      mode: 'home',
      epoch: 1,
      fence: 0,
      userId: 'ghost',
      quantity: 1,
      orderId,
      productId,
      segment: seg,
      homeSegment: seg,
      touchedAt: Date.now(),
    });
    expect(late.code).toBe('voided');
    expect(await facts(productId, 2)).toEqual({ stock: 4, outbox: 1 });
  });
});

describe('what an Idempotency-Key keeps', () => {
  it('does not keep a 425 before the sale starts: the same key buys once it is live', async () => {
    const productId = newProduct();
    await seed(productId, {
      total: 5,
      strategy: 'lockfree',
      segments: 1,
      startsAt: new Date(Date.now() + 1_500).toISOString(),
    });
    expect((await buy('early', { productId }, 'k-early')).status).toBe(425);
    // the scenario: the sale starts
    await sleep(1_600);
    const live = await buy('early', { productId }, 'k-early');
    expect(live.status).toBe(202);
    expect(live.replayed).toBe(false);
    expect(await facts(productId, 1)).toEqual({ stock: 4, outbox: 1 });
  });

  it('does not keep a 404 before the product is seeded', async () => {
    const productId = newProduct();
    expect((await buy('soon', { productId }, 'k-soon')).status).toBe(404);
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 1 });
    expect((await buy('soon', { productId }, 'k-soon')).status).toBe(202);
  });

  // A final refusal the deduct gives is stored and replayed. (A sold-out one the memory guard
  // already knows is answered from memory and stored nowhere: test/services/admission.test.ts.)
  it('keeps a final refusal: limit-reached is replayed', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 1, limitPerUser: 1 });
    expect((await buy('late', { productId })).status).toBe(202);
    const first = await buy('late', { productId }, 'k-late');
    expect([first.status, first.body.type]).toEqual([409, 'urn:seckill:problem:limit-reached']);
    expect(first.replayed).toBe(false);
    const again = await buy('late', { productId }, 'k-late');
    expect([again.status, again.body.type]).toEqual([409, 'urn:seckill:problem:limit-reached']);
    expect(again.replayed).toBe(true);
  });

  it('fingerprints the parsed request: an explicit quantity 1 is the same request as none', async () => {
    const productId = newProduct();
    await seed(productId, { total: 5, strategy: 'lockfree', segments: 1, limitPerUser: 2 });
    const a = await buy('fp', { productId }, 'k-fp');
    const b = await buy('fp', { productId, quantity: 1 }, 'k-fp');
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.replayed).toBe(true);
    expect(b.body.orderId).toBe(a.body.orderId);
    expect((await buy('fp', { productId, quantity: 2 }, 'k-fp')).status).toBe(422);
    expect(await facts(productId, 1)).toEqual({ stock: 4, outbox: 1 });
  });
});
