/**
 * The people of `npm run bench:crowd`: shoppers who arrive once and keep trying until they buy or
 * learn the item sold out, and bots that open many connections each and never wait. Both sides
 * of the run use them, with or without the waiting room. Every request and every purchase is
 * recorded so the figures come from the clients' own history.
 */
import { passDoor } from './crowd-door.js';
import { PowSolvers } from './pow-solvers.js';
import type { WaitRecord } from './crowd-estimates.js';
import { crowdClient } from './crowd-http.js';
import { percentile } from './report.js';

export interface CrowdPlan {
  base: string;
  productId: string;
  /** the sale's opening (ms since the epoch) */
  opensAt: number;
  shoppers: number;
  bots: number;
  connectionsPerBot: number;
  /** shoppers arrive at random over [opensAt - before, opensAt + after] */
  arriveBeforeMs: number;
  arriveAfterMs: number;
  /** nobody tries past this moment */
  stopAt: number;
  /** through the waiting room (join, poll, buy with the sale token) or straight at POST /seckill */
  room: boolean;
  /**
   * a proof of work at the door: the room's join needs it, or (no room) a sale token does, which
   * the purchase then needs
   */
  challenge: boolean;
  /** told each time the line changes: shoppers in it (joined, not yet admitted or gone), joined */
  onLine?: ((waiting: number, joined: number) => void) | undefined;
}

export interface CrowdHistory {
  requests: number;
  purchaseRequests: number;
  purchaseMs: number[];
  botUnits: number;
  shopperUnits: number;
  /** shoppers who arrived after the opening and bought: arrival and purchase moments */
  lateBuyers: Array<{ arrivedAt: number; boughtAt: number }>;
  /** the sum over shoppers of the time from arrival to their last answer */
  waitingShopperMs: number;
  /** every shopper's moments (ms since the epoch): arrival, admission, purchase, last answer */
  people: Array<{ arrivedAt: number; admittedAt?: number; boughtAt?: number; leftAt: number }>;
  /** each shopper's wait in the room against the estimates shown (crowd-estimates.ts) */
  waits: WaitRecord[];
  /** how long each poll of the room took (ms), as the client saw it */
  pollMs: number[];
  /** the most shoppers in line at once */
  peakWaiting: number;
  /** when each unit a bot bought was answered */
  botBuys: number[];
  statuses: Record<string, number>;
  /** each pass through the door (ms): from the first challenge asked to the answer in hand */
  doorMs: number[];
  /** CPU the crowd's proofs of work took on this machine (s): a real crowd's devices' work */
  solveCpuS: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

interface PlaceView {
  state?: string;
  position?: number | null;
  pollAfterSeconds?: number;
  estimatedWaitSeconds?: { p50: number; p90: number } | null;
  saleToken?: string | { token?: string };
}

/** The sale token of an admitted view, whichever shape the room gives it. */
export function tokenOf(view: PlaceView): string | undefined {
  const t = view.saleToken;
  return typeof t === 'string' ? t : t?.token;
}

export async function crowd(plan: CrowdPlan): Promise<CrowdHistory> {
  const h: CrowdHistory = {
    requests: 0,
    purchaseRequests: 0,
    purchaseMs: [],
    botUnits: 0,
    shopperUnits: 0,
    lateBuyers: [],
    waitingShopperMs: 0,
    people: [],
    botBuys: [],
    statuses: {},
    waits: [],
    pollMs: [],
    peakWaiting: 0,
    doorMs: [],
    solveCpuS: 0,
  };
  const solvers = plan.challenge ? new PowSolvers() : undefined;
  try {
    return await crowdWith(plan, h, solvers);
  } finally {
    h.solveCpuS = (solvers?.cpuUs ?? 0) / 1e6;
    await solvers?.close();
  }
}

async function crowdWith(
  plan: CrowdPlan,
  h: CrowdHistory,
  solvers: PowSolvers | undefined,
): Promise<CrowdHistory> {
  const http = crowdClient(plan.base);
  let waiting = 0;
  let joined = 0;
  const line = (change: number) => {
    waiting += change;
    if (change > 0) joined += change;
    h.peakWaiting = Math.max(h.peakWaiting, waiting);
    plan.onLine?.(waiting, joined);
  };
  let soldOut = false;
  const call = async (
    method: string,
    path: string,
    who: { user: string; ip: string },
    extra: Record<string, string> = {},
    body?: unknown,
  ) => {
    h.requests++;
    const res = await http.send(
      method,
      path,
      {
        'x-user-id': who.user,
        'x-forwarded-for': who.ip,
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...extra,
      },
      body === undefined ? undefined : JSON.stringify(body),
    );
    const text = res.text;
    const key = `${method} ${path.split('/')[1]} ${res.status}`;
    h.statuses[key] = (h.statuses[key] ?? 0) + 1;
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // an empty or non-JSON answer: status and headers say enough
    }
    return { status: res.status, json, retryAfter: Number(res.headers['retry-after'] ?? 1) };
  };
  const buy = async (who: { user: string; ip: string }, token?: string) => {
    h.purchaseRequests++;
    const started = performance.now();
    const r = await call('POST', '/seckill', who, token ? { 'sale-token': token } : {}, {
      productId: plan.productId,
    });
    h.purchaseMs.push(performance.now() - started);
    if (String(r.json.type ?? '').endsWith(':sold-out')) soldOut = true;
    return r;
  };
  const queuePath = `/products/${encodeURIComponent(plan.productId)}/queue`;
  const door = async (who: { user: string; ip: string }) => {
    const started = performance.now();
    const answer = await passDoor(
      plan.base,
      plan.productId,
      who,
      plan.stopAt,
      () => h.requests++,
      solvers!,
    );
    if (answer) h.doorMs.push(performance.now() - started);
    return answer;
  };
  /** A sale token through the door (no room): undefined once the sale is over for this client. */
  const tokenThroughDoor = async (who: { user: string; ip: string }) => {
    while (Date.now() < plan.stopAt && !soldOut) {
      const answer = await door(who);
      if (!answer) return undefined;
      const path = `/products/${encodeURIComponent(plan.productId)}/sale-token`;
      const r = await call('POST', path, who, { challenge: answer });
      if (r.status === 201) return String(r.json.token);
      if (r.status === 410) return undefined;
    }
    return undefined;
  };
  /** Joins the room (through the door first when there is one). */
  const joinRoom = async (who: { user: string; ip: string }) => {
    const answer = plan.challenge ? await door(who) : undefined;
    if (plan.challenge && !answer) return {} as PlaceView;
    return (await call('POST', queuePath, who, answer ? { challenge: answer } : {}))
      .json as PlaceView;
  };
  /** The room's view for this shopper, joining first; undefined once there is nothing to wait for. */
  const throughRoom = async (
    who: { user: string; ip: string },
    honest: boolean,
  ): Promise<string | undefined> => {
    const view = await joinRoom(who);
    const joinedAt = Date.now();
    const inLine = honest && view.state === 'waiting';
    if (inLine) line(1);
    try {
      return await waitInRoom(who, honest, view, joinedAt);
    } finally {
      if (inLine) line(-1);
    }
  };
  const waitInRoom = async (
    who: { user: string; ip: string },
    honest: boolean,
    first: PlaceView,
    joinedAt: number,
  ): Promise<string | undefined> => {
    let view = first;
    const wait: WaitRecord | undefined = view.estimatedWaitSeconds
      ? {
          joinedAt,
          lobby: view.position === null && view.state === 'waiting',
          positionAtJoin: view.position ?? null,
          p50AtJoinS: view.estimatedWaitSeconds.p50,
          p90AtJoinS: view.estimatedWaitSeconds.p90,
          earliestPromiseAt: joinedAt + view.estimatedWaitSeconds.p90 * 1_000,
        }
      : undefined;
    if (honest && wait) h.waits.push(wait);
    while (Date.now() < plan.stopAt) {
      const e = view.estimatedWaitSeconds;
      if (wait && e && view.state === 'waiting') {
        wait.earliestPromiseAt = Math.min(wait.earliestPromiseAt, Date.now() + e.p90 * 1_000);
      }
      const settled = ['admitted', 'sold-out', 'ended'].includes(view.state ?? '');
      if (wait && settled && wait.settledAt === undefined) {
        wait.settledAt = Date.now();
        wait.outcome = view.state;
      }
      if (view.state === 'admitted' && tokenOf(view)) return tokenOf(view);
      if (view.state === 'sold-out' || view.state === 'ended') return undefined;
      // an honest shopper waits as told; a bot asks again at once
      await sleep(honest ? (view.pollAfterSeconds ?? 1) * 1_000 : 20);
      const started = performance.now();
      const polled = await call('GET', queuePath, who);
      if (honest) h.pollMs.push(performance.now() - started);
      if (polled.status === 404) view = await joinRoom(who);
      else view = polled.json as PlaceView;
    }
    return undefined;
  };

  const shopper = async (i: number) => {
    const arrivedAt =
      plan.opensAt -
      plan.arriveBeforeMs +
      Math.random() * (plan.arriveBeforeMs + plan.arriveAfterMs);
    await sleep(arrivedAt - Date.now());
    // a /24 of their own: the door flags a block that many identities share
    const who = { user: `shopper${i}`, ip: `10.${1 + (i >> 8)}.${i & 255}.${1 + (i % 250)}` };
    const person: CrowdHistory['people'][number] = { arrivedAt, leftAt: arrivedAt };
    h.people.push(person);
    try {
      let token: string | undefined;
      while (Date.now() < plan.stopAt) {
        if ((plan.room || plan.challenge) && !token) {
          token = plan.room ? await throughRoom(who, true) : await tokenThroughDoor(who);
          if (!token) return;
          person.admittedAt = Date.now();
        }
        const r = await buy(who, token);
        if (r.status === 202) {
          h.shopperUnits++;
          person.boughtAt = Date.now();
          if (arrivedAt >= plan.opensAt) h.lateBuyers.push({ arrivedAt, boughtAt: Date.now() });
          return;
        }
        // too early, too busy, or limited: try again when told; anything else is final
        if (![0, 425, 429, 503].includes(r.status)) return;
        await sleep(r.retryAfter * 1_000);
      }
    } finally {
      person.leftAt = Date.now();
      h.waitingShopperMs += Date.now() - arrivedAt;
    }
  };

  const botBought = () => {
    h.botUnits++;
    h.botBuys.push(Date.now());
  };

  /** each bot's sale token through the door (no room), shared by its connections */
  const botTokens = new Map<number, Promise<string | undefined>>();

  /** One of a bot's connections: buys back to back, skipping the line where it can. */
  const botConnection = async (bot: number) => {
    const who = { user: `bot${bot}`, ip: `10.200.0.${bot & 255}` };
    await sleep(plan.opensAt - plan.arriveBeforeMs - Date.now());
    let token: string | undefined;
    if (plan.challenge && !plan.room) {
      if (!botTokens.has(bot)) botTokens.set(bot, tokenThroughDoor(who));
      token = await botTokens.get(bot);
      if (!token) return;
    }
    let joining: Promise<string | undefined> | undefined;
    while (!soldOut && Date.now() < plan.stopAt) {
      if (plan.room && !token) {
        // a purchase without a token, in case the room lets it through, while holding a place
        joining ??= throughRoom(who, false);
        const r = await buy(who);
        if (r.status === 202) botBought();
        const settled = await Promise.race([joining, sleep(20).then(() => 'pending' as const)]);
        if (settled !== 'pending') {
          if (!settled) return;
          token = settled;
        }
        continue;
      }
      const r = await buy(who, token);
      if (r.status === 202) botBought();
      else if (r.status === 409 && !soldOut) return; // its limit per shopper reached
    }
  };

  await Promise.all([
    ...Array.from({ length: plan.shoppers }, (_, i) => shopper(i)),
    ...Array.from({ length: plan.bots * plan.connectionsPerBot }, (_, c) =>
      botConnection(c % plan.bots),
    ),
  ]);
  http.close();
  return h;
}

/** Spearman's rank correlation of two orderings of the same items (no ties expected). */
export function spearman(pairs: Array<{ a: number; b: number }>): number {
  const n = pairs.length;
  if (n < 2) return 0;
  const rank = (key: 'a' | 'b') => {
    const r = new Map<(typeof pairs)[number], number>();
    [...pairs].sort((x, y) => x[key] - y[key]).forEach((p, i) => r.set(p, i));
    return r;
  };
  const ra = rank('a');
  const rb = rank('b');
  const d2 = pairs.reduce((s, p) => s + (ra.get(p)! - rb.get(p)!) ** 2, 0);
  return 1 - (6 * d2) / (n * (n * n - 1));
}

export const p99 = (ms: number[]) =>
  percentile(
    [...ms].sort((x, y) => x - y),
    99,
  );
