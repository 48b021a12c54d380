/**
 * The chaos run's waiting-room shoppers (docs/waiting-room.md): `shoppers` distinct shoppers
 * arrive at random over `arriveOverMs` from the start, some before the opening (the shuffled
 * lobby). Each joins from two connections at once (a second tab: it must hold one place),
 * polls no sooner than the answer's pollAfterSeconds (at most `maxPollMs`), and once admitted
 * buys one unit with its sale token, retrying an unknown answer with the same Idempotency-Key
 * (and a `sale-paused` one after its Retry-After: room-pause.ts pauses the sale meanwhile).
 * `skippers` more shoppers try to buy without joining (they must be refused). Every answer of
 * the room is a `room` history entry; the purchases are purchase entries marked `saleToken`.
 * All of a shopper's calls go to one API process while it lives, so its answers come from one
 * memory (a process that restarts reads the place back from Redis).
 */
import type { RoomOp, RoomPurchaseOp, RoomState } from './history.js';
import { rng } from './nemesis.js';
import { attempt, newOp } from './shoppers.js';

export interface RoomShopperOptions {
  urls: () => string[];
  product: string;
  shoppers: number;
  skippers: number;
  arriveOverMs: number;
  maxPollMs: number;
  seed: number;
  timeoutMs: number;
  record: (op: RoomOp | RoomPurchaseOp) => void;
  now: () => number;
}

/** The waiting-room product: final sales, so nothing comes back and the line only moves forward. */
export const roomProduct = { id: 'chaos-room', strategy: 'lockfree', segments: 4, payment: false };

/**
 * The room product's seed options: it opens `opensAt` (ms since the epoch), so the first
 * shoppers form the lobby; admission could sell `stock` in 30 % of the run, so it sells out within the run
 * even through faults (room-fifo judges those told sold-out). Admissions last
 * long enough that an unknown purchase can be settled after the sale with the same token.
 */
export function roomSeed(opensAt: number, stock: number, durationS: number) {
  const admitPerSecond = Math.max(1, Math.ceil(stock / (durationS * 0.3)));
  return {
    startsAt: new Date(opensAt).toISOString(),
    // seats for the shoppers admitted but not yet back from their next poll (up to 5 s away)
    waitingRoom: { admitPerSecond, maxActive: 10 * admitPerSecond, admittedForSeconds: 900 },
  };
}

/** Each room purchase's sale token by Idempotency-Key: settling an unknown answer resends it. */
export const roomTokens = new Map<string, string>();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
/** a paused sale's `Retry-After` (docs/operations.md#running-a-drop) */
const PAUSED_RETRY_MS = 5_000;

interface Answer {
  op: RoomOp;
  pollAfterMs: number;
  saleToken?: string;
}

async function ask(
  url: string,
  kind: RoomOp['kind'],
  o: RoomShopperOptions & { user: string },
): Promise<Answer> {
  const op = newOp();
  const invokeMs = o.now();
  let status = 0;
  let body: Record<string, unknown> = {};
  try {
    const res = await fetch(`${url}/products/${encodeURIComponent(o.product)}/queue`, {
      method: kind === 'join' ? 'POST' : 'GET',
      headers: { 'x-user-id': o.user },
      signal: AbortSignal.timeout(o.timeoutMs),
    });
    status = res.status;
    body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  } catch {
    // timeout or reset: no answer to record but its time
  }
  const saleToken = typeof body.saleToken === 'string' ? body.saleToken : undefined;
  const after = typeof body.pollAfterSeconds === 'number' ? body.pollAfterSeconds * 1_000 : 1_000;
  return {
    op: {
      type: 'room',
      op,
      kind,
      user: o.user,
      product: o.product,
      invokeMs,
      completeMs: o.now(),
      status,
      ...(typeof body.state === 'string' && { state: body.state as RoomState }),
      ...((typeof body.position === 'number' || body.position === null) && {
        position: body.position as number | null,
      }),
      token: saleToken !== undefined,
    },
    pollAfterMs: Math.min(after, o.maxPollMs),
    ...(saleToken && { saleToken }),
  };
}

/** Runs until every shopper is done or stop() is called. */
export function startRoomShoppers(o: RoomShopperOptions): { stop(): Promise<void> } {
  let stopped = false;
  const started = o.now();
  const urlOf = (i: number) => {
    const urls = o.urls();
    return urls[i % urls.length]!;
  };
  const buy = async (user: string, i: number, saleToken: string | undefined) => {
    const key = `room-s${o.seed}-${user}`;
    if (saleToken) roomTokens.set(key, saleToken);
    for (let tries = 0; tries < 3 && !stopped;) {
      const p = await attempt(urlOf(i + tries), {
        user,
        key,
        product: o.product,
        timeoutMs: o.timeoutMs,
        now: o.now,
        ...(saleToken && { saleToken }),
      });
      o.record({ ...p, saleToken: saleToken !== undefined });
      // the shop paused the sale: back after its Retry-After, with the same key (nothing ran)
      if (p.code === 'sale-paused') {
        await sleep(PAUSED_RETRY_MS);
        continue;
      }
      if (p.outcome !== 'unknown') return;
      tries++;
      await sleep(300);
    }
  };
  const shopper = async (i: number) => {
    const next = rng(o.seed * 7919 + i);
    await sleep(started + next() * o.arriveOverMs - o.now());
    const user = `room-u${i}`;
    const me = { ...o, user };
    // two tabs at once, then polls as told
    const joins = await Promise.all([ask(urlOf(i), 'join', me), ask(urlOf(i), 'join', me)]);
    joins.forEach((a) => o.record(a.op));
    let last = joins.find((a) => a.saleToken) ?? joins[0]!;
    while (!stopped) {
      if (last.saleToken) return buy(user, i, last.saleToken);
      if (last.op.state === 'sold-out' || last.op.state === 'ended') return;
      await sleep(last.pollAfterMs);
      if (stopped) return;
      last = await ask(urlOf(i), last.op.status === 404 ? 'join' : 'poll', me);
      o.record(last.op);
    }
  };
  const skipper = async (i: number) => {
    const next = rng(o.seed * 104729 + i);
    await sleep(started + next() * o.arriveOverMs - o.now());
    if (!stopped) await buy(`room-skipper${i}`, i, undefined);
  };
  const running = Promise.all([
    ...Array.from({ length: o.shoppers }, (_, i) => shopper(i)),
    ...Array.from({ length: o.skippers }, (_, i) => skipper(i)),
  ]);
  return {
    async stop() {
      stopped = true;
      await running;
    },
  };
}
