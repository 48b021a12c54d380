/**
 * The waiting room as the operator sees it (docs/waiting-room.md#metrics): a healthy room (its
 * shoppers admitted, most buying, two no-shows) that every room panel shows as it happened, and a
 * room whose seats are all held by admitted shoppers who do not buy while more wait and stock
 * remains: its line stalls for real and SeckillRoomStalled fires.
 */
import type { Observed } from './observe.js';
import { admitted, admittedBuys, joinAll, type Shopper } from './room.js';
import { backlog, buy, product, seed } from './sale.js';
import { panelValues, waitFiring } from './shown.js';
import { OBS_ROOM_MAX_PLACES } from './stack.js';
import { waitFor } from './wait.js';

const LINE = 'Waiting room: line length';
const ADMITTED = 'Waiting room: admitted per second';

/** Prometheus's sum over processes of a room counter (or histogram count) for `productId`. */
async function counted(o: Observed, metric: string, productId?: string): Promise<number> {
  const sel = productId ? `{product="${productId}"}` : '';
  return (await o.prom.query(`sum(${metric}${sel})`))[0]?.value ?? 0;
}

/** Waits until Prometheus's `metric` sum equals `truth`. */
async function countIs(o: Observed, metric: string, truth: number, productId?: string) {
  let seen = 0;
  await waitFor(
    `sum(${metric}) to be ${truth}`,
    async () => (seen = await counted(o, metric, productId)) === truth,
    30_000,
    500,
    () => String(seen),
  );
}

/** The line-length panel's three queries (waiting, admitted and not done, waiting while sold out). */
async function lineIs(o: Observed, productId: string, truth: [number, number, number]) {
  let seen: Array<number | undefined> = [];
  await waitFor(
    `the "${LINE}" panel to show ${JSON.stringify(truth)} for ${productId}`,
    async () => {
      seen = await panelValues(o, LINE, productId);
      return JSON.stringify(seen) === JSON.stringify(truth);
    },
    30_000,
    500,
    () => JSON.stringify(seen),
  );
}

/** Seeds `productId` (2 segments) behind a waiting room: the API processes' URLs to join at. */
async function seedRoom(
  o: Observed,
  productId: string,
  total: number,
  waitingRoom: { admitPerSecond: number; maxActive: number; admittedForSeconds: number },
): Promise<string[]> {
  await seed(o.stack, productId, { total, segments: 2, strategy: 'segmented', waitingRoom });
  return o.stack.apis.map((p) => p.url);
}

const HEALTHY_ROOM = 'obs-room';
/** a seat for everyone, admissions that run out in 5 s (the no-shows' seats come back) */
const HEALTHY_SEATS = { admitPerSecond: 50, maxActive: 20, admittedForSeconds: 5 };

/**
 * Part of the healthy sale: 12 shoppers join a room of 20 units, all are admitted, 10 buy and 2
 * never do (their 5 s admissions run out: abandoned). The room panels show exactly that.
 */
export async function healthyRoom(o: Observed): Promise<string> {
  const urls = await seedRoom(o, HEALTHY_ROOM, 20, HEALTHY_SEATS);
  const shoppers = await joinAll(urls, HEALTHY_ROOM, 'room', 12);
  const [buyers, noShows] = [shoppers.slice(0, 10), shoppers.slice(10)];
  const answers = await Promise.all(buyers.map((s) => admittedBuys(HEALTHY_ROOM, s)));
  if (answers.some((a) => a.status !== 202)) {
    throw new Error(`room purchases: ${JSON.stringify(answers)}`);
  }
  for (const s of noShows) await admitted(s.url, HEALTHY_ROOM, s.userId);
  await waitFor(
    'the room sale persisted',
    async () => backlog(await product(o.stack, HEALTHY_ROOM)) === 0,
    60_000,
  );
  const remaining = (await product(o.stack, HEALTHY_ROOM)).remaining;
  if (remaining !== 10) throw new Error(`${HEALTHY_ROOM}: ${remaining} remain, not 10`);
  // nobody waits, nobody admitted holds a seat once the no-shows' admissions ran out
  await lineIs(o, HEALTHY_ROOM, [0, 0, 0]);
  await countIs(o, 'seckill_room_admitted_total', 12, HEALTHY_ROOM);
  await countIs(o, 'seckill_room_abandoned_total', 2, HEALTHY_ROOM);
  // each admission timed by the process that answered the join (the only room here so far)
  await countIs(o, 'seckill_room_wait_seconds_count', 12);
  await countIs(o, 'seckill_room_estimate_error_seconds_count', 12);
  await countIs(o, 'seckill_room_joins_total', 12);
  return `room: 12 joined and admitted, 10 bought, 2 abandoned, ${remaining} left`;
}

const STALLED = 'obs-room-stalled';
/** 3 seats, and admissions that outlast the scenario (a seat frees only by a purchase) */
const STALLED_SEATS = { admitPerSecond: 50, maxActive: 3, admittedForSeconds: 600 };

/**
 * 3 seats, all held by admitted shoppers who do not buy (admitted for 10 minutes), 5 more in
 * line, 100 units: nobody can be admitted, so the line stalls with stock left. Then the holders
 * buy, the line moves, every shopper buys and the alert resolves.
 */
export async function roomStalled(o: Observed): Promise<string> {
  const urls = await seedRoom(o, STALLED, 100, STALLED_SEATS);
  const holders = await joinAll(urls, STALLED, 'stall-holder', 3);
  const tokens = await Promise.all(holders.map((s) => admitted(s.url, STALLED, s.userId)));
  const waiting: Shopper[] = await joinAll(urls, STALLED, 'stall-waiter', 5);
  await lineIs(o, STALLED, [5, 3, 0]);
  const alert = await waitFiring(o, 'SeckillRoomStalled', { product: STALLED }, 180_000);
  const admittedBefore = await counted(o, 'seckill_room_admitted_total', STALLED);
  // the seats freed, the line moves: every shopper admitted in turn and buying
  const bought = await Promise.all([
    ...holders.map((s, i) => buy(s.url, STALLED, s.userId, tokens[i])),
    ...waiting.map((s) => admittedBuys(STALLED, s)),
  ]);
  if (bought.some((a) => a.status !== 202)) {
    throw new Error(`purchases once the line moved: ${JSON.stringify(bought)}`);
  }
  await lineIs(o, STALLED, [0, 0, 0]);
  await waitFor(
    'SeckillRoomStalled to resolve',
    async () =>
      !(await o.prom.alerts()).some(
        (a) => a.labels.alertname === 'SeckillRoomStalled' && a.labels.product === STALLED,
      ),
    60_000,
  );
  return `3 seats held, 5 waiting: SeckillRoomStalled ${alert.state} (admitted ${admittedBefore}); the holders bought, all 8 sold, resolved`;
}

const FULL = 'obs-room-full';

/**
 * A line as long as ROOM_MAX_PLACES: 12 shoppers hold its places, 3 more are answered 409
 * room-full (nothing written) and SeckillRoomFull fires for that product.
 */
export async function roomFull(o: Observed): Promise<string> {
  const urls = await seedRoom(o, FULL, 50, HEALTHY_SEATS);
  await joinAll(urls, FULL, 'full-holder', OBS_ROOM_MAX_PLACES);
  const refused: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${urls[i % urls.length]}/products/${FULL}/queue`, {
      method: 'POST',
      headers: { 'x-user-id': `full-late-${i}` },
    });
    const body = (await res.json()) as { type?: string };
    if (res.status !== 409 || !body.type?.endsWith('room-full')) {
      throw new Error(`a join past the line's cap: ${res.status} ${JSON.stringify(body)}`);
    }
    refused.push(res.status);
  }
  await countIs(o, 'seckill_room_full_refusals_total', 3, FULL);
  const alert = await waitFiring(o, 'SeckillRoomFull', { product: FULL }, 120_000);
  return `${OBS_ROOM_MAX_PLACES} places held, ${refused.length} joins answered 409 room-full: SeckillRoomFull ${alert.state}`;
}
