/** Shoppers and an admin for the observed stack, over plain HTTP. */
import { ADMIN_TOKEN, type ObservedStack } from './stack.js';

export interface AdminProduct {
  remaining: number;
  sold: number;
  segments: Array<{ pending: number; persisted: number }>;
}

export async function admin<T>(
  stack: ObservedStack,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${stack.apis[0]!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

export async function seed(
  stack: ObservedStack,
  productId: string,
  spec: {
    total: number;
    segments: number;
    strategy: string;
    waitingRoom?: { admitPerSecond: number; maxActive: number; admittedForSeconds: number };
  },
): Promise<void> {
  const r = await admin(stack, 'PUT', `/admin/products/${productId}`, spec);
  if (r.status !== 201 && r.status !== 200) {
    throw new Error(`seeding ${productId}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

export async function product(stack: ObservedStack, productId: string): Promise<AdminProduct> {
  const r = await admin<AdminProduct>(stack, 'GET', `/admin/products/${productId}`);
  if (r.status !== 200) throw new Error(`GET /admin/products/${productId}: ${r.status}`);
  return r.body;
}

export const backlog = (p: AdminProduct) => p.segments.reduce((a, s) => a + s.pending, 0);

export interface Answer {
  status: number;
  code?: string;
  orderId?: string;
}

/** One purchase; `saleToken`: the admission of a waiting room's product. */
export async function buy(
  url: string,
  productId: string,
  userId: string,
  saleToken?: string,
): Promise<Answer> {
  const res = await fetch(`${url}/seckill`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-user-id': userId,
      ...(saleToken && { 'sale-token': saleToken }),
    },
    body: JSON.stringify({ productId }),
  });
  const body = (await res.json()) as { orderId?: string; type?: string };
  return {
    status: res.status,
    ...(body.type && { code: body.type.replace('urn:seckill:problem:', '') }),
    ...(body.orderId && { orderId: body.orderId }),
  };
}

export interface Load {
  /** answers so far, by status (and problem code) */
  answers: Map<string, number>;
  accepted: string[];
  /** every shopper is done (only with `max`, or after stop) */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * `concurrency` shoppers (each a new user per purchase) buying `productId` from the API processes
 * in turn until stopped, or until `max` purchases were sent.
 */
export function shoppers(
  stack: ObservedStack,
  productId: string,
  o: { concurrency: number; max?: number; users: string; extra?: (i: number) => Promise<void> },
): Load {
  const answers = new Map<string, number>();
  const accepted: string[] = [];
  let sent = 0;
  let stopped = false;
  const one = async (n: number) => {
    while (!stopped && (o.max === undefined || sent < o.max)) {
      const i = sent++;
      const url = stack.apis[i % stack.apis.length]!.url;
      const a = await buy(url, productId, `${o.users}-${i}`).catch((): Answer => ({
        status: 0,
        code: 'no-answer',
      }));
      const key = a.code ? `${a.status} ${a.code}` : String(a.status);
      answers.set(key, (answers.get(key) ?? 0) + 1);
      if (a.status === 202 && a.orderId) accepted.push(a.orderId);
      await o.extra?.(n);
    }
  };
  const running = Promise.all(Array.from({ length: o.concurrency }, (_, n) => one(n))).then(
    () => undefined,
  );
  return {
    answers,
    accepted,
    done: running,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** The whole run of `max` purchases. */
export async function sale(
  stack: ObservedStack,
  productId: string,
  o: { concurrency: number; max: number; users: string },
): Promise<Load> {
  const load = shoppers(stack, productId, o);
  await load.done;
  return load;
}
