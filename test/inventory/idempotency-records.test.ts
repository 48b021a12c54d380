/**
 * Idempotency-Key records are bounded per shopper: IDEMPOTENCY_MAX_PER_USER at most in the
 * shopper's index; at the cap the oldest final refusals go first; a record of a purchase that sold
 * is never dropped (the shopper gets 429 problem+json instead). A sale made in the home deduct's
 * own call keeps its record outside the index: the per-user limit bounds those. And each record is
 * small.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { Keys } from '../../src/redis/keys.js';
import { registerRedisMemoryGauge } from '../../src/redis/memory-gauge.js';
import { startApp, type RunningApp } from '../support/app.js';
import { useNamespace } from '../support/namespace.js';
import { shopperOf } from '../support/sale.js';
import { seedSale } from '../support/factories.js';

const ns = useNamespace();
const keys = new Keys(ns.id);
const CAP = 5;
let app: RunningApp;

beforeAll(async () => {
  app = await startApp(ns.config({ IDEMPOTENCY_MAX_PER_USER: String(CAP) }));
});
afterAll(() => app.close());

const newProduct = () => `p${randomBytes(4).toString('hex')}`;

const seed = (productId: string, body: Record<string, unknown>) =>
  seedSale(app.url, productId, { strategy: 'lockfree', segments: 1, ...body });

async function buy(productId: string, user: string, key: string) {
  const res = await fetch(`${app.url}/seckill`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-user-id': user, 'idempotency-key': key },
    body: JSON.stringify({ productId }),
  });
  return { status: res.status, type: res.headers.get('content-type'), res };
}

/** The shopper's records of a product (one segment) in Redis: every record key but the indexes. */
async function records(user: string, productId: string): Promise<string[]> {
  const { all, refusals, record } = keys.idempotency(productId, 0, user);
  const tag = record('');
  const found: string[] = [];
  // the shopper's keys share one slot: ask the node that holds it
  const redis = app.rt.redis;
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', `${tag}*`, 'COUNT', 1000);
      cursor = next;
      found.push(...batch.filter((k) => k !== all && k !== refusals));
    } while (cursor !== '0');
  }
  return found;
}

describe('Idempotency-Key records per shopper', () => {
  it('a shopper refused again and again holds exactly the cap, the newest refusals', async () => {
    const productId = newProduct();
    // refusals the deduct gives (limit reached): a sold-out product's the guard answers storing
    // nothing (test/services/admission.test.ts)
    await seed(productId, { total: 100, limitPerUser: 1 });
    expect((await buy(productId, 'flooder', 'w-1')).status).toBe(202);
    for (let i = 0; i < CAP * 4; i++) {
      const r = await buy(productId, 'flooder', `f-${i}`);
      expect(r.status).toBe(409);
    }
    // the cap's refusals, and the sale's record beside them (outside the index)
    expect(await records('flooder', productId)).toHaveLength(CAP + 1);
    // the newest are kept: a retry of the last key is a replay, of the first a fresh run
    const last = await buy(productId, 'flooder', `f-${CAP * 4 - 1}`);
    expect(last.res.headers.get('idempotent-replayed')).toBe('true');
    const first = await buy(productId, 'flooder', 'f-0');
    expect(first.status).toBe(409);
    expect(first.res.headers.get('idempotent-replayed')).toBeNull();
    expect(await records('flooder', productId)).toHaveLength(CAP + 1);
    expect((await buy(productId, 'flooder', 'w-1')).res.headers.get('idempotent-replayed')).toBe(
      'true',
    );
  });

  it('never drops a record of a purchase that sold: home sales past the cap, then 429 problem+json once indexed sales fill it', async () => {
    const productId = newProduct();
    // two segments of CAP + 1 units: the buyer's home sells first, each record written by the
    // sale's own call (outside the index), then the other segment's units, each spill claimed
    // (its record indexed, and kept once it sold)
    await seed(productId, { total: 2 * (CAP + 1), segments: 2, limitPerUser: 100 });
    const buyer = shopperOf(0, 2, `buyer-${productId}-`);
    const bought: string[] = [];
    for (let i = 0; i < 2 * CAP + 1; i++) {
      const r = await buy(productId, buyer, `b-${i}`);
      expect(r.status).toBe(202);
      bought.push(((await r.res.json()) as { orderId: string }).orderId);
    }
    const { all } = keys.idempotency(productId, 0, buyer);
    expect(await app.rt.redis.zcard(all)).toBe(CAP);
    const over = await buy(productId, buyer, 'b-over');
    expect(over.status).toBe(429);
    expect(over.type).toMatch(/^application\/problem\+json/);
    const body = (await over.res.json()) as { code?: string; type: string };
    expect(body.type).toBe('urn:seckill:problem:idempotency-records-full');
    expect(Number(over.res.headers.get('retry-after'))).toBeGreaterThan(0);
    // nothing sold for it, every sold record still replays
    expect((await app.rt.products.state(productId))!.remaining).toBe(1);
    expect(await records(buyer, productId)).toHaveLength(2 * CAP + 1);
    for (let i = 0; i < 2 * CAP + 1; i++) {
      const again = await buy(productId, buyer, `b-${i}`);
      expect(again.status).toBe(202);
      expect(((await again.res.json()) as { orderId: string }).orderId).toBe(bought[i]);
    }
    // another shopper is not affected
    expect((await buy(productId, 'someone-else', 'b-over')).status).toBe(202);
  });

  it('stores a refusal in a small record', async () => {
    const productId = newProduct();
    await seed(productId, { total: 1 });
    expect((await buy(productId, 'w', 'k')).status).toBe(202);
    expect((await buy(productId, 'small', 'k-small')).status).toBe(409);
    const [key] = await records('small', productId);
    const size = await app.rt.redis.strlen(key!);
    // the fingerprint and the answer as sent (the problem body is ~200 bytes); was ~470
    expect(size).toBeLessThanOrEqual(320);
  });

  it('Redis runs with a memory limit, and its use of it is a metric to alert on', async () => {
    const redis = app.rt.redis;
    const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
    const registry = new Registry();
    registerRedisMemoryGauge(registry, redis);
    const { values } = (await registry.getSingleMetric('seckill_redis_memory_used_ratio')!.get())!;
    expect(values).toHaveLength(nodes.length);
    for (const v of values) {
      expect(v.value).toBeGreaterThan(0);
      expect(v.value).toBeLessThan(1);
    }
    for (const n of nodes) {
      expect(await n.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    }
  });
});
