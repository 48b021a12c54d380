/**
 * The shared factories of the HTTP tests: a seeded sale, final sales of a new product, and an
 * order whose row (and so its order.created event) is written. A file binds them to its app and
 * its defaults (strategy, segments) in one line rather than keeping a copy of the request.
 */
import { expect } from 'vitest';
import type { Db } from '../../src/db/index.js';
import { waitFor } from './cli.js';
import { TEST_ADMIN_TOKEN } from './namespace.js';
import { newProduct, newUser, type paymentClient } from './payments.js';

type Client = ReturnType<typeof paymentClient>;

/**
 * PUT /admin/products/:id on the API at `base` as the test admin (`headers` added, e.g. an
 * `x-operator`): the product seeded (201) or, with `status`, whatever that answer is (a reseed
 * is 200). The answer's text is the assertion's message.
 */
export async function seedSale(
  base: string,
  productId: string,
  body: Record<string, unknown>,
  o: { query?: string; status?: number | number[]; headers?: Record<string, string> } = {},
): Promise<{ epoch: number }> {
  const res = await fetch(`${base}/admin/products/${productId}${o.query ?? ''}`, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
      'content-type': 'application/json',
      ...o.headers,
    },
    body: JSON.stringify(body),
  });
  expect([o.status ?? 201].flat(), await res.clone().text()).toContain(res.status);
  return (await res.json()) as { epoch: number };
}

/** `n` final sales of a new product (seeded with `n` units): one order.created each; their ids. */
export async function sell(client: Client, n: number): Promise<string[]> {
  const productId = newProduct();
  await client.seed(productId, { total: n });
  const orders: string[] = [];
  for (let i = 0; i < n; i++) {
    const o = await client.buy(productId, newUser());
    if (!o.ok) throw new Error(o.code);
    orders.push(o.orderId);
  }
  return orders;
}

/** One unit of `productId` sold to `user`, once its row (and its first event) is written. */
export async function orderWithEvents(
  client: Client,
  db: Db,
  productId: string,
  user: string,
): Promise<string> {
  const o = await client.buy(productId, user);
  if (!o.ok) throw new Error(o.code);
  const row = () =>
    db.selectFrom('orders').select('id').where('id', '=', o.orderId).executeTakeFirst();
  await waitFor(`the row of ${o.orderId}`, row, 30_000, 20);
  return o.orderId;
}
