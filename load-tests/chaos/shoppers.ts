/**
 * Chaos shoppers, paced (an open schedule of `rate` purchases a second over `concurrency`
 * loops, so the run is about faults, not about how fast this machine is). Users come from a
 * pool (repeats meet `limitPerUser`); each purchase has its own Idempotency-Key, retried with the
 * same key after a timeout, reset or 5xx as a client library would (up to 3 tries). A buyer of a
 * payment-window product then pays (starts the payment, and the provider's signed webhook
 * settles it), cancels, or walks away and lets the hold expire. Every HTTP answer that decides
 * something is one history entry: ok, fail (a definite refusal) or unknown.
 */
import { signNotice } from '../../src/http/notice-signature.js';
import type { Outcome, PurchaseOp, SettleOp } from './history.js';
import { rng } from './nemesis.js';

export interface ShopperOptions {
  urls: () => string[];
  products: Array<{ id: string; payment: boolean }>;
  users: number;
  concurrency: number;
  /** purchases started per second, over all loops */
  rate: number;
  seed: number;
  timeoutMs: number;
  webhookSecret: string;
  record: (op: PurchaseOp | SettleOp) => void;
  now: () => number;
}

let nextOp = 0;
/** A history operation number no other entry of this run has. */
export const newOp = () => nextOp++;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function outcomeOf(status: number): Outcome {
  if (status >= 200 && status < 300) return 'ok';
  if (status >= 400 && status < 500 && status !== 408) return 'fail';
  return 'unknown';
}

/**
 * A 202 is ok. `409 idempotency-key-in-use` is not a refusal: an earlier try with this key is
 * still running (it may sell), so like a 503 it is unknown until a retry answers. `503
 * sale-paused` is one: an operator paused the sale and nothing ran (memory or the deduct said so).
 */
export function purchaseOutcome(status: number, code: unknown): Outcome {
  if (status === 202) return 'ok';
  if (status === 409 && code === 'idempotency-key-in-use') return 'unknown';
  if (status === 503 && code === 'sale-paused') return 'fail';
  return outcomeOf(status) === 'ok' ? 'unknown' : outcomeOf(status);
}

/**
 * Whether an answer settles its key: a 202 or a definite refusal, but not `sale-paused`, which says
 * only that nothing has sold under the key yet (a keyed purchase is refused by the deduct, which
 * reads the key's record first): the shopper tries the key again once the sale resumes.
 */
export const settlesKey = (p: PurchaseOp): boolean =>
  p.outcome !== 'unknown' && p.code !== 'sale-paused';

async function call(
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: res.status, body };
  } catch {
    return { status: 0, body: {} }; // timeout or reset: it may or may not have happened
  }
}

export async function attempt(
  url: string,
  o: {
    user: string;
    key: string;
    product: string;
    timeoutMs: number;
    now: () => number;
    /** sent as Sale-Token (a waiting room's admission) */
    saleToken?: string;
  },
): Promise<PurchaseOp> {
  const op = nextOp++;
  const invokeMs = o.now();
  const { status, body } = await call(
    `${url}/seckill`,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-user-id': o.user,
        'idempotency-key': o.key,
        ...(o.saleToken && { 'sale-token': o.saleToken }),
      },
      body: JSON.stringify({ productId: o.product }),
    },
    o.timeoutMs,
  );
  const orderId = typeof body.orderId === 'string' ? body.orderId : undefined;
  // a problem's type is urn:seckill:problem:<code>
  const code = typeof body.type === 'string' ? body.type.split(':').at(-1) : undefined;
  return {
    type: 'purchase',
    op,
    user: o.user,
    key: o.key,
    product: o.product,
    quantity: 1,
    invokeMs,
    completeMs: o.now(),
    outcome: purchaseOutcome(status, code),
    status,
    ...(code && { code }),
    ...(orderId && { orderId }),
  };
}

/**
 * The buyer's move after a 202 on a payment-window product: pay (start the payment until the
 * order is persisted, then the provider's webhook), cancel, or nothing (the hold expires).
 */
async function settle(
  o: ShopperOptions,
  next: () => number,
  buy: { user: string; product: string; orderId: string },
): Promise<void> {
  const roll = next();
  if (roll >= 0.8) return; // walks away: the hold expires
  const type = roll < 0.55 ? 'pay' : 'cancel';
  const base = () => o.urls()[Math.floor(next() * o.urls().length)]!;
  const headers = { 'content-type': 'application/json', 'x-user-id': buy.user };
  const op = nextOp++;
  const invokeMs = o.now();
  let status = 0;
  // the order must be persisted before it can be paid or cancelled: 404 / 503 until then
  for (let tries = 0; tries < 20; tries++) {
    if (type === 'cancel') {
      ({ status } = await call(
        `${base()}/orders/${buy.orderId}/cancel`,
        { method: 'POST', headers },
        o.timeoutMs,
      ));
    } else {
      const intent = await call(
        `${base()}/orders/${buy.orderId}/pay`,
        { method: 'POST', headers },
        o.timeoutMs,
      );
      status = intent.status;
      if (status === 200 || status === 201) {
        const body = JSON.stringify({
          type: 'payment.succeeded',
          orderId: buy.orderId,
          paymentIntentId: intent.body.paymentIntentId,
          paymentId: `pay-${buy.orderId}`,
        });
        ({ status } = await call(
          `${base()}/payments/webhook`,
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'seckill-signature': signNotice(body, o.webhookSecret),
            },
            body,
          },
          o.timeoutMs,
        ));
      }
    }
    if (status === 200 || status === 409) break; // decided: done, or the window closed first
    await sleep(300);
  }
  o.record({
    type,
    op,
    orderId: buy.orderId,
    user: buy.user,
    product: buy.product,
    invokeMs,
    completeMs: o.now(),
    outcome: status === 200 ? 'ok' : outcomeOf(status) === 'ok' ? 'unknown' : outcomeOf(status),
    status,
  });
}

/** Runs until stop() resolves. */
export function startShoppers(o: ShopperOptions): { stop(): Promise<void> } {
  let stopped = false;
  let n = 0;
  const started = o.now();
  const settling = new Set<Promise<void>>();
  const one = async (loop: number) => {
    const next = rng(o.seed * 1000 + loop);
    for (let slot = 0; !stopped; slot++) {
      // this loop's next start on the open schedule; late starts do not catch up in a burst
      const due = started + ((slot * o.concurrency + loop) * 1000) / o.rate;
      if (due > o.now()) await sleep(due - o.now());
      if (stopped) break;
      const i = n++;
      const user = `u${Math.floor(next() * o.users)}`;
      const product = o.products[Math.floor(next() * o.products.length)]!;
      const key = `s${o.seed}-l${loop}-${i}`;
      for (let tries = 0; tries < 3 && !stopped; tries++) {
        const urls = o.urls();
        const op = await attempt(urls[(i + tries) % urls.length]!, {
          user,
          key,
          product: product.id,
          timeoutMs: o.timeoutMs,
          now: o.now,
        });
        o.record(op);
        if (op.outcome === 'ok' && product.payment && op.orderId) {
          const s = settle(o, next, { user, product: product.id, orderId: op.orderId });
          settling.add(s);
          void s.finally(() => settling.delete(s));
        }
        if (op.outcome !== 'unknown') break;
        await sleep(200 + next() * 300);
      }
    }
  };
  const running = Promise.all(Array.from({ length: o.concurrency }, (_, w) => one(w)));
  return {
    async stop() {
      stopped = true;
      await running;
      await Promise.all([...settling]);
    },
  };
}
