/**
 * The chaos run's draw shoppers (docs/draw.md): `shoppers` distinct shoppers enter the draw product
 * at random before its close, each from two connections at once (it must hold one entry); `late`
 * more try to enter in the seconds after the close (each must be refused). Then every entrant reads
 * its entry as told (pollAfterSeconds, at most `maxPollMs`) until it is won, expired or not drawn;
 * a winner buys one unit with its sale token, but one in four does not (its right runs out and
 * passes down the waitlist). Every answer is a `draw` history entry; the purchases are purchase
 * entries marked `saleToken`. A shopper's calls go to one API process while it lives.
 */
import type { DrawOp, RoomPurchaseOp } from './history.js';
import { rng } from './nemesis.js';
import { roomTokens } from './room-shoppers.js';
import { attempt, newOp } from './shoppers.js';

export interface DrawShopperOptions {
  urls: () => string[];
  product: string;
  shoppers: number;
  late: number;
  /** ms of the run (from its start) when entries close */
  closeMs: number;
  maxPollMs: number;
  seed: number;
  timeoutMs: number;
  record: (op: DrawOp | RoomPurchaseOp) => void;
  now: () => number;
}

/** The draw product: final sales, a winner's right lasting 5 s, so the cascade runs in the run. */
export const drawProduct = { id: 'chaos-draw', strategy: 'lockfree', segments: 4, payment: false };

/** Its seed: entries from now until `closeAt` (ms since the epoch). */
export const drawSeed = (closeAt: number) => ({
  draw: {
    entriesOpenAt: new Date(Date.now() - 1_000).toISOString(),
    entriesCloseAt: new Date(closeAt).toISOString(),
    buyWithinSeconds: 5,
  },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function ask(
  url: string,
  kind: DrawOp['kind'],
  o: DrawShopperOptions & { user: string },
): Promise<{ op: DrawOp; pollAfterMs: number; saleToken?: string }> {
  const invokeMs = o.now();
  let status = 0;
  let body: Record<string, unknown> = {};
  try {
    const res = await fetch(`${url}/products/${encodeURIComponent(o.product)}/draw/entry`, {
      method: kind === 'enter' ? 'POST' : 'GET',
      headers: { 'x-user-id': o.user },
      signal: AbortSignal.timeout(o.timeoutMs),
    });
    status = res.status;
    body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  } catch {
    // timeout or reset: no answer to record but its time
  }
  const after = typeof body.pollAfterSeconds === 'number' ? body.pollAfterSeconds * 1_000 : 1_000;
  return {
    op: {
      type: 'draw',
      op: newOp(),
      kind,
      user: o.user,
      product: o.product,
      invokeMs,
      completeMs: o.now(),
      status,
      ...(typeof body.entryId === 'string' && { entryId: body.entryId }),
      ...(typeof body.state === 'string' && { state: body.state as DrawOp['state'] }),
      ...((typeof body.rank === 'number' || body.rank === null) && {
        rank: body.rank as number | null,
      }),
    },
    pollAfterMs: Math.min(after, o.maxPollMs),
    ...(typeof body.saleToken === 'string' && { saleToken: body.saleToken }),
  };
}

/** Runs until every shopper is done or stop() is called. */
export function startDrawShoppers(o: DrawShopperOptions): { stop(): Promise<void> } {
  let stopped = false;
  const started = o.now();
  const urlOf = (i: number) => {
    const urls = o.urls();
    return urls[i % urls.length]!;
  };
  const buy = async (user: string, i: number, saleToken: string) => {
    const key = `draw-s${o.seed}-${user}`;
    roomTokens.set(key, saleToken);
    for (let tries = 0; tries < 3 && !stopped; tries++) {
      const p = await attempt(urlOf(i + tries), {
        user,
        key,
        product: o.product,
        timeoutMs: o.timeoutMs,
        now: o.now,
        saleToken,
      });
      o.record({ ...p, saleToken: true });
      if (p.outcome !== 'unknown') return;
      await sleep(300);
    }
  };
  const shopper = async (i: number) => {
    const next = rng(o.seed * 6007 + i);
    await sleep(started + next() * (o.closeMs - 1_500) - o.now());
    const user = `draw-u${i}`;
    const me = { ...o, user };
    const entries = await Promise.all([ask(urlOf(i), 'enter', me), ask(urlOf(i), 'enter', me)]);
    entries.forEach((a) => o.record(a.op));
    if (!entries.some((a) => a.op.entryId)) return;
    const buys = next() >= 0.25;
    let last = await ask(urlOf(i), 'read', me);
    o.record(last.op);
    while (!stopped) {
      const state = last.op.state;
      if (state === 'won' && last.saleToken) return buys ? buy(user, i, last.saleToken) : undefined;
      if (state === 'expired' || state === 'not-drawn' || last.op.status === 404) return;
      await sleep(last.pollAfterMs);
      if (stopped) return;
      last = await ask(urlOf(i), 'read', me);
      o.record(last.op);
    }
  };
  const late = async (i: number) => {
    const next = rng(o.seed * 104659 + i);
    await sleep(started + o.closeMs + 200 + next() * 3_000 - o.now());
    if (!stopped) o.record((await ask(urlOf(i), 'enter', { ...o, user: `draw-late${i}` })).op);
  };
  const running = Promise.all([
    ...Array.from({ length: o.shoppers }, (_, i) => shopper(i)),
    ...Array.from({ length: o.late }, (_, i) => late(i)),
  ]);
  return {
    async stop() {
      stopped = true;
      await running;
    },
  };
}
